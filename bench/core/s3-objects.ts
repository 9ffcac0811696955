import {
  DeleteObjectsCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  type S3Client,
} from "@aws-sdk/client-s3";

/** Every object under `prefix`, page by page (1,000 keys a page). */
async function* objectsUnder(client: S3Client, bucket: string, prefix: string) {
  let token: string | undefined;
  do {
    const page: ListObjectsV2CommandOutput = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    yield page.Contents ?? [];
    token = page.NextContinuationToken;
  } while (token);
}

/** The sum of the sizes of the objects under `prefix`: what S3 stores (and bills) there. */
export async function objectBytes(client: S3Client, bucket: string, prefix: string) {
  let bytes = 0;
  for await (const page of objectsUnder(client, bucket, prefix)) {
    for (const object of page) bytes += object.Size ?? 0;
  }
  return bytes;
}

/** Deletes every object under `prefix`, so a figure leaves no gigabytes behind it. */
export async function removeObjects(client: S3Client, bucket: string, prefix: string) {
  // Always the first page again: a continuation token may skip keys once others are deleted.
  for (;;) {
    const { value: page } = await objectsUnder(client, bucket, prefix).next();
    if (!page || page.length === 0) return;
    await client.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: page.map(({ Key }) => ({ Key })), Quiet: true },
      }),
    );
  }
}
