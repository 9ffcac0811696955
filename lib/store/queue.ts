import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";

/** Sends JSON messages to one SQS queue. */
export class Queue {
  constructor(
    readonly sqs: SQSClient,
    readonly url: string,
  ) {}

  async send(message: unknown, delaySeconds = 0): Promise<void> {
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.url,
        MessageBody: JSON.stringify(message),
        ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) } : {}),
      }),
    );
  }
}
