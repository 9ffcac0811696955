import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { Access, BucketArea, ObjectAction } from "../../../functions/manifest.js";
import { competitorBlobPrefix } from "../../../lib/competitors/snapshot.js";
import { sourceBlobPrefix } from "../../../lib/knowledge/sources/sources.js";
import { presignedFileKey } from "../../../lib/knowledge/uploads/files.js";
import { TABLE_INDEXES } from "../../../lib/store/schema.js";
import { exportBlobPrefix } from "../../../lib/workspaces/export/exports.js";
import type { WorkQueues } from "./queues.js";
import type { Storage } from "./storage.js";

/** Where each area of the bucket lives, from the code that names its keys. */
export const AREA_KEYS: Record<BucketArea, string> = {
  sources: `${sourceBlobPrefix("*", "*")}*`,
  uploads: presignedFileKey("*", "*"),
  competitors: `${competitorBlobPrefix("*", "*")}*`,
  // lib/search/config.ts: the index of a deploy is `s3://<bucket>/search`.
  search: "search/*",
  exports: `${exportBlobPrefix("*")}*`,
};

const OBJECT_ACTIONS: Record<ObjectAction, string[]> = {
  read: ["s3:GetObject"],
  readVersions: ["s3:GetObjectVersion"],
  write: ["s3:PutObject"],
  // A PutObject that sets tags is authorised for s3:PutObjectTagging too.
  tag: ["s3:PutObjectTagging"],
  // `Blobs.delete` sends DeleteObjects, which S3 authorises as s3:DeleteObject per key.
  delete: ["s3:DeleteObject"],
};

const TABLE_ACTIONS = {
  read: ["dynamodb:GetItem", "dynamodb:Query"],
  readWrite: [
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
  ],
};

/** The KMS calls of lib/store/keys.ts: sealing a secret, and opening one. */
const KEY_ACTIONS = {
  encrypt: ["kms:GenerateDataKey"],
  decrypt: ["kms:Decrypt"],
};

/** Why the object grants name a pattern: each area's keys start with a workspace's id. */
export const PREFIX_GRANT_REASON =
  "Objects are granted by their area's key prefix (ws/*/kb/*, uploads/ws/*/kb/*/upload, " +
  "ws/*/competitors/*, search/*, exports/ws/*/*): " +
  "workspaces are created at run time, so the workspace id in the key is a wildcard; tenants are " +
  "kept apart by the code, which keys every object by the caller's workspace.";

/** The only secret any function may read: the model provider's key. */
export interface ModelKeySecret {
  name: string;
  /** ARN pattern of the secret (Secrets Manager appends six random characters to the name). */
  arn: string;
}

/** The one sender email may leave as: MAIL_FROM, and its SES identities' ARNs. */
export interface MailSender {
  address: string;
  identities: string[];
}

export interface GrantTargets {
  storage: Storage;
  queues: WorkQueues;
  modelKey: ModelKeySecret | undefined;
  mailSender?: MailSender | undefined;
}

/**
 * A function's policy, action by action from its manifest entry: exactly the calls its code
 * makes (lib/store/table.ts, blobs.ts, queue.ts, and the search engine's reads, writes and
 * clean-ups under `search/`), on the key prefixes of the areas it touches.
 */
export function accessStatements(access: Access, targets: GrantTargets): PolicyStatement[] {
  const { storage, queues, modelKey, mailSender } = targets;
  const statements: PolicyStatement[] = [];
  if (access.table) {
    statements.push(
      new PolicyStatement({
        actions: TABLE_ACTIONS[access.table],
        resources: [
          storage.table.tableArn,
          ...TABLE_INDEXES.map((index) => `${storage.table.tableArn}/index/${index.name}`),
        ],
      }),
    );
  }
  const areas = Object.entries(access.bucket ?? {}) as Array<[BucketArea, ObjectAction[]]>;
  for (const [area, actions] of areas) {
    const objectActions = actions.flatMap((action) => OBJECT_ACTIONS[action]);
    // The search engine writes large files in parts and aborts the parts of a failed write.
    if (area === "search" && actions.includes("write"))
      objectActions.push("s3:AbortMultipartUpload");
    statements.push(
      new PolicyStatement({
        actions: objectActions,
        resources: [storage.bucket.arnForObjects(AREA_KEYS[area])],
      }),
    );
  }
  if (areas.length > 0) {
    // Not narrowed by an s3:prefix condition: S3 answers a read of a missing key 404 only to a
    // caller that may list the bucket (403 otherwise), and that check carries no prefix, so the
    // code's "missing" answers (upload not there yet, no vectors stored) would become errors.
    statements.push(
      new PolicyStatement({ actions: ["s3:ListBucket"], resources: [storage.bucket.bucketArn] }),
    );
  }
  const sends = access.sends ?? [];
  if (sends.length > 0) {
    statements.push(
      new PolicyStatement({
        actions: ["sqs:SendMessage"],
        resources: sends.map((queue) => queues.queue(queue).queueArn),
      }),
    );
  }
  if (access.keys) {
    statements.push(
      new PolicyStatement({
        actions: KEY_ACTIONS[access.keys],
        resources: [storage.dataKey.keyArn],
      }),
    );
  }
  if (access.mail && mailSender) {
    // SESv2 SendEmail (raw content included) is authorised as ses:SendEmail; the v1 API's
    // ses:SendRawEmail is never called. The From address is pinned too, so the identity cannot
    // send as any other of its addresses.
    statements.push(
      new PolicyStatement({
        actions: ["ses:SendEmail"],
        resources: mailSender.identities,
        conditions: { StringEquals: { "ses:FromAddress": mailSender.address } },
      }),
    );
  }
  if (access.model && modelKey) {
    statements.push(
      new PolicyStatement({
        actions: ["secretsmanager:GetSecretValue"],
        resources: [modelKey.arn],
      }),
    );
  }
  return statements;
}
