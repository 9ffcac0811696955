import type { RouteConfig } from "@hono/zod-openapi";
import { Aws, Duration } from "aws-cdk-lib";
import type { Stage } from "aws-cdk-lib/aws-apigateway";
import { Metric } from "aws-cdk-lib/aws-cloudwatch";
import { CfnWebACL, CfnWebACLAssociation } from "aws-cdk-lib/aws-wafv2";
import { Construct } from "constructs";

export interface FirewallProps {
  /** The WebACL's name: the stage is in it, and its metrics are found by it. */
  name: string;
  /** The API stage the WebACL guards, and the path prefix of that stage (`/v1`). */
  stage: Stage;
  stagePath: string;
  /** Every route of the API, to tell the routes that take a body from those that take none. */
  routes: RouteConfig[];
  /** Requests per source address per 5 minutes: any request, and those without a bearer key. */
  rateLimit: number;
  anonymousRateLimit: number;
}

/**
 * Labels of AWSManagedRulesCommonRuleSet's rules that inspect the body. On the API they are
 * counted, not blocked, and blocked again by `body-rules-outside-body-routes` on every route that
 * takes no body. Where a body is taken, it is the service's content: a text source of up to 1 MB,
 * a multipart upload of up to 4 MiB, a chat with its history, an artifact. SizeRestrictions_BODY
 * blocks any body over 8 KB, so every upload and most text sources would be refused; the
 * cross-site scripting, file inclusion and metadata-address rules match ordinary documents (an
 * HTML page's `<script>`, a Markdown link to `../`, a runbook naming 169.254.169.254). Those
 * bodies are bounded and checked by the service itself: API Gateway's 10 MB, the functions' 4 MiB
 * multipart and MAX_TEXT_BYTES limits, every route's schema, and the fetcher's refusal of private
 * addresses; nothing the service returns renders a body as HTML.
 */
export const COUNTED_BODY_RULES = [
  "SizeRestrictions_BODY",
  "CrossSiteScripting_BODY",
  "GenericLFI_BODY",
  "GenericRFI_BODY",
  "EC2MetaDataSSRF_BODY",
] as const;

const label = (rule: string) =>
  `awswaf:managed:aws:core-rule-set:${rule.replace(/_BODY$/, "_Body")}`;

/** The regular expression of the URI paths of the routes that take a body, behind the stage's prefix or not. */
export function bodyRoutesPattern(routes: RouteConfig[], stagePath: string): string {
  const paths = [
    ...new Set(
      routes
        .filter((route) => route.request?.body !== undefined)
        .map((route) =>
          route.path
            .split(/(\{[^}]+\})/)
            .map((part) =>
              part.startsWith("{") ? "[^/]+" : part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"),
            )
            .join(""),
        ),
    ),
  ].sort();
  // AWS WAF's regular expressions take no capturing groups: (?: ) only.
  const pattern = `^(?:${stagePath})?(?:${paths.join("|")})/?$`;
  // A regex match statement holds 512 characters; past that, a regex pattern set holds more.
  if (pattern.length > 512) throw new Error(`The body routes' pattern is too long: ${pattern}`);
  return pattern;
}

const visibility = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
  metricName,
  cloudWatchMetricsEnabled: true,
  sampledRequestsEnabled: true,
});

/** The service's 429 body, as the gateway's own throttle answers. */
const RATE_LIMITED_BODY = "rate-limited";
const rateLimited: CfnWebACL.RuleActionProperty = {
  block: { customResponse: { responseCode: 429, customResponseBodyKey: RATE_LIMITED_BODY } },
};

const managed = (
  priority: number,
  name: string,
  overrides: readonly string[] = [],
): CfnWebACL.RuleProperty => ({
  name,
  priority,
  overrideAction: { none: {} },
  statement: {
    managedRuleGroupStatement: {
      vendorName: "AWS",
      name,
      ...(overrides.length > 0
        ? {
            ruleActionOverrides: overrides.map((rule) => ({
              name: rule,
              actionToUse: { count: {} },
            })),
          }
        : {}),
    },
  },
  visibilityConfig: visibility(name),
});

/**
 * AWS WAF in front of the API's stage (REGIONAL): Amazon's IP reputation list, a rate-based
 * rule per source address over every request and a lower one over requests that carry no bearer
 * key (the console's pages and the docs are the only routes without one; preflights are left out,
 * a browser sends them without credentials), AWS's known-bad-inputs rules, and the common rule set
 * with its body rules counted where the route takes a body (see `COUNTED_BODY_RULES`). Rate-limited
 * callers get 429 with the service's error body.
 */
export class Firewall extends Construct {
  readonly webAcl: CfnWebACL;
  /** Names of the rate-based rules' metrics, by what each limits. */
  static readonly RATE_RULES = { perAddress: "rate-per-address", anonymous: "rate-anonymous" };
  private readonly name: string;

  constructor(scope: Construct, id: string, props: FirewallProps) {
    super(scope, id);
    this.name = props.name;
    const { perAddress, anonymous } = Firewall.RATE_RULES;
    this.webAcl = new CfnWebACL(this, "WebAcl", {
      name: props.name,
      scope: "REGIONAL",
      defaultAction: { allow: {} },
      visibilityConfig: visibility(props.name),
      customResponseBodies: {
        [RATE_LIMITED_BODY]: {
          contentType: "APPLICATION_JSON",
          content: JSON.stringify({
            error: {
              code: "rate_limited",
              message: "Too many requests from this address; retry later",
            },
          }),
        },
      },
      rules: [
        managed(0, "AWSManagedRulesAmazonIpReputationList"),
        {
          name: perAddress,
          priority: 1,
          action: rateLimited,
          statement: {
            rateBasedStatement: {
              limit: props.rateLimit,
              aggregateKeyType: "IP",
              evaluationWindowSec: 300,
            },
          },
          visibilityConfig: visibility(perAddress),
        },
        {
          name: anonymous,
          priority: 2,
          action: rateLimited,
          statement: {
            rateBasedStatement: {
              limit: props.anonymousRateLimit,
              aggregateKeyType: "IP",
              evaluationWindowSec: 300,
              // No `Authorization: Bearer …` (a request without the header matches no byte match),
              // and not a CORS preflight.
              scopeDownStatement: {
                andStatement: {
                  statements: [
                    {
                      notStatement: {
                        statement: {
                          byteMatchStatement: {
                            fieldToMatch: { singleHeader: { Name: "authorization" } },
                            positionalConstraint: "STARTS_WITH",
                            searchString: "bearer ",
                            textTransformations: [{ priority: 0, type: "LOWERCASE" }],
                          },
                        },
                      },
                    },
                    {
                      notStatement: {
                        statement: {
                          byteMatchStatement: {
                            fieldToMatch: { method: {} },
                            positionalConstraint: "EXACTLY",
                            searchString: "OPTIONS",
                            textTransformations: [{ priority: 0, type: "NONE" }],
                          },
                        },
                      },
                    },
                  ],
                },
              },
            },
          },
          visibilityConfig: visibility(anonymous),
        },
        managed(3, "AWSManagedRulesKnownBadInputsRuleSet"),
        managed(4, "AWSManagedRulesCommonRuleSet", COUNTED_BODY_RULES),
        {
          name: "body-rules-outside-body-routes",
          priority: 5,
          action: { block: {} },
          statement: {
            andStatement: {
              statements: [
                {
                  orStatement: {
                    statements: COUNTED_BODY_RULES.map((rule) => ({
                      labelMatchStatement: { scope: "LABEL", key: label(rule) },
                    })),
                  },
                },
                {
                  notStatement: {
                    statement: {
                      regexMatchStatement: {
                        fieldToMatch: { uriPath: {} },
                        regexString: bodyRoutesPattern(props.routes, props.stagePath),
                        textTransformations: [{ priority: 0, type: "NONE" }],
                      },
                    },
                  },
                },
              ],
            },
          },
          visibilityConfig: visibility("body-rules-outside-body-routes"),
        },
      ],
    });
    new CfnWebACLAssociation(this, "Association", {
      resourceArn: props.stage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });
  }

  /** Requests a rule blocked, summed over `period`. */
  metricBlocked(rule: string, period = Duration.minutes(5)): Metric {
    return new Metric({
      namespace: "AWS/WAFV2",
      metricName: "BlockedRequests",
      dimensionsMap: { WebACL: this.name, Region: Aws.REGION, Rule: rule },
      statistic: "Sum",
      period,
    });
  }
}
