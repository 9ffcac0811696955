import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A Secrets Manager endpoint on 127.0.0.1 for tests, speaking what the SDK sends (AWS JSON 1.1:
 * `POST /` with `X-Amz-Target: secretsmanager.GetSecretValue`). Secrets are set by the test; an
 * unknown one answers ResourceNotFoundException, as AWS does.
 */
export class FakeSecretsManager {
  readonly secrets = new Map<string, string>();
  /** GetSecretValue calls answered, by secret id. */
  readonly reads: string[] = [];
  private readonly server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
        res.end(JSON.stringify(body));
      };
      if (req.headers["x-amz-target"] !== "secretsmanager.GetSecretValue") {
        return reply(400, { __type: "UnknownOperationException", message: "Not faked" });
      }
      const { SecretId } = JSON.parse(Buffer.concat(parts).toString("utf8")) as {
        SecretId: string;
      };
      this.reads.push(SecretId);
      const value = this.secrets.get(SecretId);
      if (value === undefined) {
        return reply(400, {
          __type: "ResourceNotFoundException",
          message: "Secrets Manager can't find the specified secret.",
        });
      }
      reply(200, {
        ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${SecretId}`,
        Name: SecretId,
        SecretString: value,
        VersionId: `v${this.reads.length}`,
        VersionStages: ["AWSCURRENT"],
        CreatedDate: Date.now() / 1000,
      });
    });
  });
  private url = "";

  static async start(): Promise<FakeSecretsManager> {
    const fake = new FakeSecretsManager();
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /** The endpoint to give the SDK (AWS_ENDPOINT_URL_SECRETS_MANAGER). */
  get endpoint(): string {
    return this.url;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
