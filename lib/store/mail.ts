import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SESv2Client, SendEmailCommand } from "@aws-sdk/client-sesv2";
import type { Config } from "../config.js";
import { tracer } from "../tracing.js";

/** One message ready to leave: its envelope and its whole MIME text (headers and body). */
export interface OutgoingMail {
  from: string;
  to: string[];
  raw: string;
}

/** How mail leaves: answers the message's id, throws when it was not accepted. */
export interface Mailer {
  send(mail: OutgoingMail): Promise<string>;
}

/**
 * Amazon SES (API v2): SendEmail with the raw message, so the MIME the service built (its
 * multipart text and HTML, its headers) is what SES sends. The IAM grant is `ses:SendEmail` on
 * the sender's identity only (infra/aws/constructs/grants.ts).
 */
export class SesMailer implements Mailer {
  constructor(private readonly client: SESv2Client) {}

  async send(mail: OutgoingMail): Promise<string> {
    const answer = await this.client.send(
      new SendEmailCommand({
        FromEmailAddress: mail.from,
        Destination: { ToAddresses: mail.to },
        Content: { Raw: { Data: Buffer.from(mail.raw, "utf8") } },
      }),
    );
    return answer.MessageId ?? "";
  }
}

/**
 * Local development and tests: each message is written as an `.eml` file into `dir` (a mail
 * client opens it as received), named by time so the folder lists in sending order.
 */
export class OutboxMailer implements Mailer {
  constructor(private readonly dir: string) {}

  async send(mail: OutgoingMail): Promise<string> {
    await mkdir(this.dir, { recursive: true });
    const id = `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomUUID()}`;
    await writeFile(join(this.dir, `${id}.eml`), mail.raw, { flag: "wx" });
    return id;
  }
}

/** The mailer a configuration names: the outbox folder when MAIL_OUTBOX_DIR is set, else SES. */
export function createMailer(config: Config): Mailer {
  if (config.MAIL_OUTBOX_DIR) return new OutboxMailer(config.MAIL_OUTBOX_DIR);
  // Throttling and transient errors are retried once by the SDK, each call bounded, so a send
  // ends within the attempt's lease (lib/webhooks/delivery-gate.ts); the delivery's own retries
  // with backoff follow.
  const client = new SESv2Client({
    maxAttempts: 2,
    retryMode: "standard",
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 4_000 },
  });
  return new SesMailer(tracer.captureAWSv3Client(client));
}
