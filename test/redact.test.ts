import { describe, expect, it } from "vitest";
import { z } from "zod";
import { redactError, redactUrl, redactUrls } from "../lib/redact.js";
import { recordHandler } from "../lib/store/queue.js";
import { FetchError } from "../lib/web/errors.js";
import { loggedWhile } from "./support/captured-logs.js";

/** URLs people give the service reach the logs as origin and path only. */

describe("redactUrl", () => {
  it("keeps the origin and path, and drops the query, the fragment and the user info", () => {
    expect(redactUrl("https://hooks.example.com/kb/in?token=abc&x=1#frag")).toBe(
      "https://hooks.example.com/kb/in",
    );
    expect(redactUrl("https://user:pass@hooks.example.com:8443/kb")).toBe(
      "https://hooks.example.com:8443/kb",
    );
    expect(redactUrl(new URL("http://127.0.0.1/?k=v"))).toBe("http://127.0.0.1/");
    expect(redactUrl("mailto:someone@example.com?subject=token")).toBe("mailto:[redacted]");
    expect(redactUrl("not a url with ?token=abc")).toBe("[not a URL]");
  });

  it("cuts every URL inside a text, and leaves the rest of it as it was", () => {
    expect(
      redactUrls(
        "https://a.example/x?token=1 answered HTTP 500 (after http://b.example/y?k=2), see it",
      ),
    ).toBe("https://a.example/x answered HTTP 500 (after http://b.example/y), see it");
  });
});

describe("an error in a log line", () => {
  it("keeps its class, code and cause, with every URL cut", () => {
    const cause = new Error("GET https://c.example/z?token=inner failed");
    const error = new FetchError(
      "connection_failed",
      "https://site.example/p?token=outer could not be reached (ECONNREFUSED)",
    );
    Object.defineProperty(error, "cause", { value: cause });
    const copy = redactError(error) as FetchError;
    expect(copy).toBeInstanceOf(FetchError);
    expect(copy.code).toBe("connection_failed");
    expect(copy.message).toBe("https://site.example/p could not be reached (ECONNREFUSED)");
    expect(copy.stack).not.toContain("token");
    expect((copy.cause as Error).message).toBe("GET https://c.example/z failed");
    expect(error.message).toContain("token=outer");
  });

  it("is cut in the line a worker writes when a message fails", async () => {
    const handle = recordHandler(z.object({ url: z.string() }), async ({ url }) => {
      throw new FetchError("timeout", `${url} did not answer in time`);
    });
    const lines = await loggedWhile(() =>
      expect(
        handle({
          messageId: "m1",
          body: JSON.stringify({ url: "https://site.example/a?session=s3cr3t" }),
          attributes: { ApproximateReceiveCount: "1" },
        }),
      ).rejects.toThrow(/session=s3cr3t/),
    );
    const failed = lines.find((line) => line.message === "message failed");
    expect(failed?.error).toMatchObject({
      name: "FetchError",
      code: "timeout",
      message: "https://site.example/a did not answer in time",
    });
    expect(JSON.stringify(lines)).not.toContain("s3cr3t");
  });
});
