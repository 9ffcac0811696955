import { CfnResource, Duration, RemovalPolicy, type Stack, Validations } from "aws-cdk-lib";
import { BackupPlan, BackupPlanRule, BackupResource, BackupVault } from "aws-cdk-lib/aws-backup";
import { AttributeType, BillingMode, Table } from "aws-cdk-lib/aws-dynamodb";
import { Schedule } from "aws-cdk-lib/aws-events";
import { Key } from "aws-cdk-lib/aws-kms";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import { BlockPublicAccess, Bucket, BucketEncryption, HttpMethods } from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { SCREENSHOT_TAGS } from "../../../lib/competitors/screenshots.js";
import { UPLOADS_PREFIX } from "../../../lib/knowledge/uploads/files.js";
import { TABLE_INDEXES, TABLE_KEY, TTL_ATTRIBUTE } from "../../../lib/store/schema.js";
import { EXPORT_RETENTION_DAYS, EXPORTS_PREFIX } from "../../../lib/workspaces/export/exports.js";

/** How the data is kept from loss: both on unless a dev stage turns them off (settings.ts). */
export interface DataProtection {
  /**
   * The table refuses to be deleted (DynamoDB deletion protection) and is kept when the stack is
   * deleted, as is the secrets' KMS key. Off, both go with the stack (a dev stage's clean-up).
   */
  deletionProtection: boolean;
  /** An AWS Backup plan copies the table into a vault of its own: daily and monthly. */
  backups: boolean;
}

export interface StorageProps {
  /** Browser origins that may post presigned uploads straight to the bucket. */
  corsOrigins: string[];
  /** What every name the stack sets starts with (`kb-intel-<stage>`). */
  prefix: string;
  dataProtection: DataProtection;
  /** Days competitors' screenshots are kept (`SNAPSHOT_RETENTION_DAYS`, as their snapshots). */
  screenshotRetentionDays: number;
}

/** Replaced and deleted objects are kept this long, to undo a mistake, then expire. */
export const NONCURRENT_DAYS = 30;

/**
 * The AWS Backup rules of the table: a daily backup kept 35 days (as far back as point-in-time
 * recovery reaches, but in a vault that outlives the table and its recovery window) and a monthly
 * one kept a year. docs/operations.md (Restoring data) says how to restore from each.
 */
export const BACKUP_RULES = [
  { name: "daily", cron: { hour: "3", minute: "30" }, keepDays: 35 },
  { name: "monthly", cron: { day: "1", hour: "4", minute: "30" }, keepDays: 365 },
] as const;

/**
 * The single table (records), the single bucket (content, chunks, snapshots), and the KMS key
 * that seals secrets kept in the table (envelope encryption: lib/store/keys.ts). The bucket is
 * always kept on stack deletion; the table and the key too unless `deletionProtection` is off.
 */
export class Storage extends Construct {
  readonly table: Table;
  readonly bucket: Bucket;
  /** Webhook signing secrets are sealed under data keys of this key (rotated yearly by KMS). */
  readonly dataKey: Key;
  /** The vault of the table's backups; absent when `backups` is off. */
  readonly backupVault: BackupVault | undefined;

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id);
    const { deletionProtection, backups } = props.dataProtection;
    const kept = deletionProtection ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.table = new Table(this, "Table", {
      partitionKey: { name: TABLE_KEY.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE_KEY.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TTL_ATTRIBUTE,
      deletionProtection,
      removalPolicy: kept,
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
        {
          // Competitors' screenshots live under their workspace's prefix, which no rule can name
          // alone: their tag says what they are. They expire with the snapshots they show.
          id: "expired-screenshots",
          tagFilters: SCREENSHOT_TAGS,
          expiration: Duration.days(props.screenshotRetentionDays),
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
    this.dataKey = new Key(this, "DataKey", {
      alias: `${props.prefix}-data`,
      description: "Seals webhook signing secrets in the table (envelope encryption)",
      enableKeyRotation: true,
      removalPolicy: kept,
      // Deleted with a dev stage's stack: a week to cancel it, the shortest KMS allows is 7 days.
      ...(deletionProtection ? {} : { pendingWindow: Duration.days(7) }),
    });
    this.backupVault = backups ? this.backupPlan(props.prefix) : undefined;
    Validations.of(this.bucket).acknowledge({
      id: "AwsSolutions-S1",
      reason:
        "Every object is written and read by the functions, whose requests are in their logs " +
        "and X-Ray traces; server access logs would need a second bucket for no new answer.",
    });
  }

  /** The table's backup plan, into a vault of its own that is kept when the stack is deleted. */
  private backupPlan(prefix: string): BackupVault {
    const vault = new BackupVault(this, "BackupVault", {
      backupVaultName: `${prefix}-backups`,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const plan = new BackupPlan(this, "BackupPlan", {
      backupPlanName: `${prefix}-table`,
      backupVault: vault,
      backupPlanRules: BACKUP_RULES.map(
        (rule) =>
          new BackupPlanRule({
            ruleName: rule.name,
            scheduleExpression: Schedule.cron(rule.cron),
            deleteAfter: Duration.days(rule.keepDays),
          }),
      ),
    });
    const selection = plan.addSelection("Table", {
      resources: [BackupResource.fromDynamoDbTable(this.table)],
    });
    const role = selection.node.tryFindChild("Role");
    if (role) {
      Validations.of(role).acknowledge({
        id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup]",
        reason:
          "AWS Backup's own role for taking backups: the managed policy AWS keeps up to date " +
          "with what each service's backup needs; it is assumed by backup.amazonaws.com alone.",
      });
    }
    return vault;
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
