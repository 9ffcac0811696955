import { Duration, Validations } from "aws-cdk-lib";
import { Alarm, ComparisonOperator, Metric, TreatMissingData } from "aws-cdk-lib/aws-cloudwatch";
import {
  LambdaApplication,
  LambdaDeploymentConfig,
  LambdaDeploymentGroup,
} from "aws-cdk-lib/aws-codedeploy";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Construct } from "constructs";
import { LIVE_ALIAS, type ServiceFunction } from "./service-function.js";

/** How a deploy reaches all traffic: 10% of it for 5 minutes, then the rest. */
export const DEPLOY_CONFIG = LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES;

export interface DeployedFunction {
  name: string;
  fn: ServiceFunction;
  /** The duration the new version must stay under, and at which percentile. */
  latency: { statistic: string; thresholdMs: number };
}

export interface DeploymentsProps {
  /** Prefix of the alarms' names (`kb-intel-<stage>`). */
  prefix: string;
  functions: DeployedFunction[];
}

/**
 * Every deploy of a function behind a `live` alias is a CodeDeploy deployment: the new version
 * takes 10% of the alias's invocations for 5 minutes, then all of them, and goes back to the old
 * one if it fails, is stopped, or one of its two alarms goes off meanwhile.
 *
 * The rollback alarms watch the new version only: the alias's metrics for the version it executed
 * (`ExecutedVersion`). The function's own alarms (`Monitoring`) count every version; one in alarm
 * when a deploy starts would stop it at once, so a fix could not be deployed while the failure it
 * fixes goes on. The alarms are updated to the new version before the alias moves (the alias
 * depends on them); they notify no one: the failed deploy, rolled back, is the notice.
 */
export class Deployments extends Construct {
  readonly groups = new Map<string, LambdaDeploymentGroup>();
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: DeploymentsProps) {
    super(scope, id);
    const application = new LambdaApplication(this, "Application");
    const role = new Role(this, "Role", {
      assumedBy: new ServicePrincipal("codedeploy.amazonaws.com"),
    });
    Validations.of(role).acknowledge({
      id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]",
      reason:
        "CodeDeploy's documented role for Lambda deployments: it reads the alarms, invokes " +
        "no hooks here and updates the aliases; CDK attaches it to every deployment group.",
    });
    for (const { name, fn, latency } of props.functions) {
      const alias = fn.live;
      const version = (metricName: string, statistic: string) =>
        new Metric({
          namespace: "AWS/Lambda",
          metricName,
          dimensionsMap: {
            FunctionName: fn.functionName,
            Resource: `${fn.functionName}:${LIVE_ALIAS}`,
            ExecutedVersion: fn.currentVersion.version,
          },
          statistic,
          period: Duration.minutes(1),
        });
      const errors = new Alarm(this, `${name}-errors`, {
        alarmName: `${props.prefix} deploy errors ${name}`,
        alarmDescription: `The version of ${name} being deployed failed an invocation: it is rolled back.`,
        metric: version("Errors", "Sum"),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      const slow = new Alarm(this, `${name}-latency`, {
        alarmName: `${props.prefix} deploy latency ${name}`,
        alarmDescription:
          `The version of ${name} being deployed ran over ${latency.thresholdMs} ms at ` +
          `${latency.statistic} for 2 minutes: it is rolled back.`,
        metric: version("Duration", latency.statistic),
        threshold: latency.thresholdMs,
        evaluationPeriods: 2,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      alias.node.addDependency(errors, slow);
      this.alarms.push(errors, slow);
      this.groups.set(
        name,
        new LambdaDeploymentGroup(this, name, {
          application,
          alias,
          role,
          deploymentConfig: DEPLOY_CONFIG,
          alarms: [errors, slow],
          autoRollback: {
            failedDeployment: true,
            stoppedDeployment: true,
            deploymentInAlarm: true,
          },
        }),
      );
    }
  }
}
