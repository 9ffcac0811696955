import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";

/**
 * The checks S3 makes of a browser-based upload (a presigned POST) before it stores anything,
 * which s3rver skips: the policy's SigV4 signature with a known key, its expiration, each of its
 * conditions (`eq` and `starts-with` on the bucket and the form's fields, `content-length-range`
 * on the file), and that it names every field of the form. The answers are S3's: the status,
 * error code and message it gives for each violation.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html
 */

export interface EmulatorCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A POST upload as S3 reads it. */
export interface PostUpload {
  /** The bucket it was posted to. */
  bucket: string;
  /** The form's fields before its file, in their order (S3 ignores what comes after the file). */
  fields: Array<[name: string, value: string]>;
  /** The file's size in bytes. */
  fileBytes: number;
}

/** An error as S3 answers it: status, code, message and details, as XML. */
export class S3Failure {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
    readonly details: Record<string, string | number> = {},
  ) {}

  xml(): string {
    const element = (name: string, value: string | number) =>
      `<${name}>${xmlText(value)}</${name}>`;
    const details = Object.entries(this.details).map(([name, value]) => element(name, value));
    return `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${[
      element("Code", this.code),
      element("Message", this.message),
      ...details,
      element("RequestId", randomUUID()),
    ].join("")}</Error>`;
  }
}

const xmlText = (value: string | number) =>
  String(value).replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** Fields S3 does not ask a policy to name. */
const UNNAMED = new Set(["policy", "x-amz-signature", "file"]);

const hmac = (key: string | Buffer, data: string) =>
  createHmac("sha256", key).update(data).digest();

const missing = (name: string) =>
  new S3Failure(
    400,
    "InvalidArgument",
    `Bucket POST must contain a field named '${name}'.  If it is specified, please check the order of the fields.`,
    { ArgumentName: name, ArgumentValue: "" },
  );

const invalidPolicy = (why: string) =>
  new S3Failure(400, "InvalidPolicyDocument", `Invalid Policy: ${why}`);

const denied = (why: string) =>
  new S3Failure(403, "AccessDenied", `Invalid according to Policy: ${why}`);

/** Why S3 would refuse this upload, or undefined when it would store it. */
export function checkPostPolicy(
  upload: PostUpload,
  credentials: EmulatorCredentials[],
  now = Date.now(),
): S3Failure | undefined {
  const names = upload.fields.map(([name]) => name.toLowerCase());
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  // A field given twice would be checked as one value and stored as the other.
  if (twice !== undefined) {
    return new S3Failure(400, "InvalidArgument", `Field ${twice} must appear once`, {
      ArgumentName: twice,
    });
  }
  const field = (name: string) =>
    upload.fields.find(([given]) => given.toLowerCase() === name.toLowerCase())?.[1];
  const policy = field("policy");
  // Without a policy the upload is anonymous, and the bucket takes no anonymous writes.
  if (policy === undefined) return new S3Failure(403, "AccessDenied", "Access Denied");
  for (const name of ["x-amz-algorithm", "x-amz-credential", "x-amz-signature"]) {
    if (field(name) === undefined) return missing(name);
  }
  if (field("x-amz-algorithm") !== "AWS4-HMAC-SHA256") {
    return new S3Failure(400, "InvalidArgument", "Only AWS4-HMAC-SHA256 is supported", {
      ArgumentName: "x-amz-algorithm",
      ArgumentValue: field("x-amz-algorithm") ?? "",
    });
  }

  // The signature: HMAC-SHA256 of the policy as sent, with the key of the credential's scope.
  const credential = field("x-amz-credential") ?? "";
  const [accessKeyId, date, region, service, terminal] = credential.split("/");
  if (!accessKeyId || !date || !region || service !== "s3" || terminal !== "aws4_request") {
    return new S3Failure(400, "InvalidArgument", `Invalid credential: ${credential}`, {
      ArgumentName: "x-amz-credential",
      ArgumentValue: credential,
    });
  }
  const secret = credentials.find((c) => c.accessKeyId === accessKeyId)?.secretAccessKey;
  if (secret === undefined) {
    return new S3Failure(
      403,
      "InvalidAccessKeyId",
      "The AWS Access Key Id you provided does not exist in our records.",
      { AWSAccessKeyId: accessKeyId },
    );
  }
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
  const expected = hmac(signingKey, policy);
  const given = Buffer.from(field("x-amz-signature") ?? "", "hex");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return new S3Failure(
      403,
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
    );
  }

  let document: { expiration?: unknown; conditions?: unknown };
  try {
    document = JSON.parse(Buffer.from(policy, "base64").toString("utf8"));
  } catch {
    return invalidPolicy("Invalid JSON.");
  }
  const expiration = Date.parse(String(document.expiration));
  if (typeof document.expiration !== "string" || Number.isNaN(expiration)) {
    return invalidPolicy(`Invalid 'expiration' value: '${String(document.expiration)}'`);
  }
  if (now > expiration) return denied("Policy expired.");
  if (!Array.isArray(document.conditions)) return invalidPolicy("Policy missing conditions.");

  const named = new Set<string>();
  let sizeRange: [number, number] | undefined;
  for (const condition of document.conditions as unknown[]) {
    const check = conditionOf(condition);
    if (!check) return invalidPolicy(`Invalid Policy element: ${JSON.stringify(condition)}`);
    if (check.kind === "content-length-range") {
      sizeRange = [check.min, check.max];
      continue;
    }
    const name = check.field.toLowerCase();
    named.add(name);
    const value = name === "bucket" ? upload.bucket : field(name);
    const holds =
      value !== undefined &&
      (check.kind === "eq" ? value === check.value : value.startsWith(check.value));
    if (!holds) {
      const shown = JSON.stringify([check.kind, `$${check.field}`, check.value]);
      return denied(`Policy Condition failed: ${shown.replaceAll(",", ", ")}`);
    }
  }
  const extra = upload.fields
    .map(([name]) => name.toLowerCase())
    .filter((name) => !UNNAMED.has(name) && !name.startsWith("x-ignore-") && !named.has(name));
  if (extra.length > 0) return denied(`Extra input fields: ${extra.join(", ")}`);

  if (sizeRange) {
    const [min, max] = sizeRange;
    if (upload.fileBytes > max) {
      return new S3Failure(
        400,
        "EntityTooLarge",
        "Your proposed upload exceeds the maximum allowed size",
        {
          ProposedSize: upload.fileBytes,
          MaxSizeAllowed: max,
        },
      );
    }
    if (upload.fileBytes < min) {
      return new S3Failure(
        400,
        "EntityTooSmall",
        "Your proposed upload is smaller than the minimum allowed size",
        {
          ProposedSize: upload.fileBytes,
          MinSizeAllowed: min,
        },
      );
    }
  }
  return undefined;
}

type Condition =
  | { kind: "eq" | "starts-with"; field: string; value: string }
  | { kind: "content-length-range"; min: number; max: number };

/** A policy condition: `{"field": "value"}`, `["eq" | "starts-with", "$field", "value"]`, or a size range. */
function conditionOf(condition: unknown): Condition | undefined {
  if (Array.isArray(condition)) {
    const [operator, first, second] = condition as unknown[];
    const kind = String(operator).toLowerCase();
    if (kind === "content-length-range" && Number.isInteger(first) && Number.isInteger(second)) {
      return { kind, min: first as number, max: second as number };
    }
    if (
      (kind === "eq" || kind === "starts-with") &&
      typeof first === "string" &&
      first.startsWith("$") &&
      typeof second === "string"
    ) {
      return { kind, field: first.slice(1), value: second };
    }
    return undefined;
  }
  if (condition && typeof condition === "object") {
    const entries = Object.entries(condition);
    const [entry] = entries;
    if (entries.length === 1 && entry && typeof entry[1] === "string") {
      return { kind: "eq", field: entry[0], value: entry[1] };
    }
  }
  return undefined;
}
