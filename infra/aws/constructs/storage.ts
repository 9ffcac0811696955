import { CfnResource, Duration, RemovalPolicy, type Stack, Validations } from "aws-cdk-lib";
import { AttributeType, BillingMode, Table } from "aws-cdk-lib/aws-dynamodb";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import { BlockPublicAccess, Bucket, BucketEncryption, HttpMethods } from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { UPLOADS_PREFIX } from "../../../lib/knowledge/uploads/files.js";
import { TABLE_INDEXES, TABLE_KEY, TTL_ATTRIBUTE } from "../../../lib/store/schema.js";
import { EXPORT_RETENTION_DAYS, EXPORTS_PREFIX } from "../../../lib/workspaces/export/exports.js";

export interface StorageProps {
  /** Browser origins that may post presigned uploads straight to the bucket. */
  corsOrigins: string[];
}

/** Replaced and deleted objects are kept this long, to undo a mistake, then expire. */
export const NONCURRENT_DAYS = 30;

/** The single table (records) and the single bucket (content, chunks, snapshots). Both kept on stack deletion. */
export class Storage extends Construct {
  readonly table: Table;
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id);
    this.table = new Table(this, "Table", {
      partitionKey: { name: TABLE_KEY.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE_KEY.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TTL_ATTRIBUTE,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of TABLE_INDEXES) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
      });
    }
    this.bucket = new Bucket(this, "Bucket", {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // Versions undo an overwrite or a delete; indexing reads an upload by its version id.
      versioned: true,
      lifecycleRules: [
        {
          id: "noncurrent-versions",
          noncurrentVersionExpiration: Duration.days(NONCURRENT_DAYS),
          expiredObjectDeleteMarker: true,
        },
        { id: "incomplete-multipart", abortIncompleteMultipartUploadAfter: Duration.days(1) },
        {
          // A presigned upload is checked and moved within minutes, or failed by the watchdog
          // after its URL's lifetime and grace; what is left is never read again.
          id: "abandoned-uploads",
          prefix: UPLOADS_PREFIX,
          expiration: Duration.days(1),
          noncurrentVersionExpiration: Duration.days(1),
        },
        {
          // A workspace export's bundle is a copy of its data: downloadable for a week, then gone.
          id: "expired-exports",
          prefix: EXPORTS_PREFIX,
          expiration: Duration.days(EXPORT_RETENTION_DAYS),
          noncurrentVersionExpiration: Duration.days(1),
        },
      ],
      // Browsers post presigned uploads straight to the bucket, from the allowed origins only.
      ...(props.corsOrigins.length > 0
        ? {
            cors: [
              {
                allowedMethods: [HttpMethods.POST],
                allowedOrigins: props.corsOrigins,
                allowedHeaders: ["*"],
              },
            ],
          }
        : {}),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.bucket).acknowledge({
      id: "AwsSolutions-S1",
      reason:
        "Every object is written and read by the functions, whose requests are in their logs " +
        "and X-Ray traces; server access logs would need a second bucket for no new answer.",
    });
  }

  /**
   * Gives CDK's bucket-notification handler (a function of CDK's own, created with the first
   * notification) a log group that expires, created before the handler first runs and logs.
   */
  keepNotificationLogs(stack: Stack): void {
    const handler = stack.node
      .findAll()
      .find(
        (c): c is CfnResource =>
          c instanceof CfnResource &&
          c.cfnResourceType === "AWS::Lambda::Function" &&
          c.node.path.includes("/BucketNotificationsHandler"),
      );
    if (!handler) throw new Error("No bucket-notification handler in the stack");
    const logs = new LogGroup(this, "NotificationHandlerLogs", {
      logGroupName: `/aws/lambda/${handler.ref}`,
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const notifications = this.bucket.node.tryFindChild("Notifications");
    notifications?.node.addDependency(logs);
    const cdkOwn = "CDK's own handler of the bucket's notification configuration, run at deploy";
    const validations = Validations.of(handler.node.scope ?? handler);
    validations.acknowledge({
      id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
      reason: `${cdkOwn}: CDK gives it the basic execution role (logs only).`,
    });
    validations.acknowledge({
      id: "AwsSolutions-IAM5[Resource::*]",
      reason: `${cdkOwn}: s3:PutBucketNotification is granted by CDK on any bucket.`,
    });
    for (const id of [
      "AwsSolutions-L1",
      "Serverless-LambdaLatestVersion",
      "Serverless-LambdaDLQ",
    ]) {
      validations.acknowledge({ id, reason: `${cdkOwn}: runtime and invocation are CDK's.` });
    }
  }
}
