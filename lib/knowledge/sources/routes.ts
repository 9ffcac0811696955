import { toDisplayText } from "../../display-text.js";
import { conflict, DomainError } from "../../errors.js";
import { createModule } from "../../http/app.js";
import type { Quotas } from "../../limits/quotas.js";
import type { Blobs } from "../../store/blobs.js";
import { Passages } from "../indexing/passages.js";
import { evaluate } from "../retrieval/evaluation.js";
import type { Retriever } from "../retrieval/retrieval.js";
import { createFileSource } from "../uploads/multipart.js";
import {
  createSource,
  deleteSource,
  evaluateSearch,
  getSource,
  getSourceText,
  listSources,
  MAX_TEXT_SPAN,
  patchSource,
  reindexSource,
  searchKnowledge,
} from "./contract.js";
import { type Sources, toPublic } from "./sources.js";
import { checkedUrl } from "./url-input.js";

export interface SourcesRoutesDeps {
  sources: Sources;
  blobs: Blobs;
  retriever: Retriever;
  maxTextBytes: number;
  quotas: Quotas;
  /** ALLOW_PRIVATE_URLS: lets URL sources point at loopback and private hosts (development and tests). */
  allowPrivate: boolean;
}

/** Default name of a text source: its first line made a display string, shortened. */
function nameFromText(text: string): string {
  const firstLine = toDisplayText((text.trim().split("\n", 1)[0] ?? "").replace(/^#+\s*/, ""));
  if (!firstLine) return "Untitled text";
  return firstLine.length > 80 ? `${firstLine.slice(0, 77).trimEnd()}...` : firstLine;
}

const isMultipart = (type: string | undefined) => /^multipart\/form-data/i.test(type ?? "");

export function sourcesRoutes({
  sources,
  blobs,
  retriever,
  maxTextBytes,
  allowPrivate,
  quotas,
}: SourcesRoutesDeps) {
  const app = createModule();
  const passages = new Passages(blobs);

  app.openapi(createSource, async (c) => {
    const workspaceId = c.get("workspaceId");
    const body = isMultipart(c.req.header("content-type"))
      ? c.req.valid("form")
      : c.req.valid("json");
    const settings = { metadata: body.metadata, chunking: body.chunking };
    if ("file" in body) {
      const { file, name } = body;
      const created = await quotas.reserving(workspaceId, "upload_bytes", (reserve) =>
        createFileSource({ sources, blobs }, workspaceId, file, { name, reserve, settings }),
      );
      const { id, name: sourceName } = created.source;
      return c.json(
        {
          id,
          status: "indexing" as const,
          type: "file" as const,
          name: sourceName,
          bytes: created.bytes,
        },
        200,
      );
    }
    if (body.url !== undefined) {
      const url = checkedUrl(body.url, "url", allowPrivate);
      // One page fetched, whether the URL is new or the workspace has it (a refresh).
      const { item, created } = await quotas.reserving(
        workspaceId,
        "crawl_pages",
        async (reserve) => {
          await reserve(1);
          return sources.addUrl(workspaceId, {
            url,
            name: body.name ?? url,
            refresh: body.refresh,
            settings: { ...settings, render: body.render },
          });
        },
      );
      return c.json({ id: item.id, status: "indexing" as const, created }, 200);
    }
    const text = body.text ?? "";
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > maxTextBytes) {
      throw new DomainError("payload_too_large", `Text is limited to ${maxTextBytes} bytes`, {
        details: { limit: maxTextBytes, bytes },
      });
    }
    const item = await quotas.reserving(workspaceId, "upload_bytes", async (reserve) => {
      await reserve(bytes);
      return sources.createText(workspaceId, text, body.name ?? nameFromText(text), settings);
    });
    return c.json({ id: item.id, status: "indexing" as const }, 200);
  });

  app.openapi(listSources, async (c) => {
    const { limit, cursor, status, enabled, type, crawl_id } = c.req.valid("query");
    const filter = {
      status,
      type,
      crawl_id,
      enabled: enabled === undefined ? undefined : enabled ? 1 : 0,
    } as const;
    const page = await sources.list(c.get("workspaceId"), filter, limit, cursor);
    return c.json({ sources: page.items.map(toPublic), nextCursor: page.nextCursor }, 200);
  });

  app.openapi(searchKnowledge, async (c) => {
    const { query, limit, ...scope } = c.req.valid("json");
    return c.json(await retriever.retrieve(c.get("workspaceId"), query, limit, scope), 200);
  });

  app.openapi(evaluateSearch, async (c) => {
    const { questions, k } = c.req.valid("json");
    return c.json(await evaluate(retriever, c.get("workspaceId"), questions, k), 200);
  });

  app.openapi(getSourceText, async (c) => {
    const item = await sources.get(c.get("workspaceId"), c.req.valid("param").id);
    const text = item.chunks_key ? await passages.text(item.chunks_key) : undefined;
    if (text === undefined) {
      throw conflict(
        item.chunks_key
          ? "The source was indexed before its text was kept; reindex it to read spans"
          : "The source has no indexed text yet",
      );
    }
    const { start, end = start + MAX_TEXT_SPAN } = c.req.valid("query");
    const from = Math.min(start, text.length);
    const to = Math.min(end, text.length);
    return c.json({ text: text.slice(from, to), start: from, end: to, length: text.length }, 200);
  });

  app.openapi(getSource, async (c) => {
    const item = await sources.get(c.get("workspaceId"), c.req.valid("param").id);
    return c.json(toPublic(item), 200);
  });

  app.openapi(patchSource, async (c) => {
    const item = await sources.update(
      c.get("workspaceId"),
      c.req.valid("param").id,
      c.req.valid("json"),
    );
    return c.json(toPublic(item), 200);
  });

  app.openapi(reindexSource, async (c) => {
    const workspaceId = c.get("workspaceId");
    const { id } = c.req.valid("param");
    const current = await sources.get(workspaceId, id);
    if (current.status === "awaiting_upload") {
      throw conflict("The file has not been uploaded yet; upload it first");
    }
    // Charged when accepted: a web page is fetched again, stored content chunked and embedded again.
    await quotas.consume(workspaceId, current.type === "url" ? "crawl_pages" : "reindexes");
    const item = await sources.reindex(workspaceId, id);
    return c.json({ id: item.id, status: "indexing" as const }, 200);
  });

  app.openapi(deleteSource, async (c) => {
    await sources.delete(c.get("workspaceId"), c.req.valid("param").id);
    return c.body(null, 204);
  });

  return app;
}
