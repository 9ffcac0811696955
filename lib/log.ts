import { Logger } from "@aws-lambda-powertools/logger";

/** One structured JSON logger for the whole service (level from POWERTOOLS_LOG_LEVEL). */
export const logger = new Logger({ serviceName: "kb-intel" });
