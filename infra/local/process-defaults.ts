/**
 * The local runtime's defaults for the process, set before any module of the service loads (the
 * first import of main.ts): Powertools and the AWS SDK read them when their objects are created.
 * A value set in the shell wins.
 */

// The Lambdas run Node 22; locally Node 20 is supported, so the SDK's upgrade notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
// EMF lines are for CloudWatch, which reads them from the functions' logs on AWS; at a terminal
// they would be JSON between the readable lines (POWERTOOLS_METRICS_DISABLED=false shows them).
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
