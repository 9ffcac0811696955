/**
 * The origin a browser sends a presigned POST of the bucket to on AWS: the SDK addresses a bucket
 * virtual-hosted on its region's endpoint (`https://<bucket>.s3.<region>.amazonaws.com/`), and a
 * name with dots by path on the endpoint, as a dot would break the certificate's wildcard. The
 * console's content security policy allows uploads to this origin alone.
 */
export function bucketOrigin(bucket: string, region: string): string {
  return bucket.includes(".")
    ? `https://s3.${region}.amazonaws.com`
    : `https://${bucket}.s3.${region}.amazonaws.com`;
}
