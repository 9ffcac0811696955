import type { z } from "@hono/zod-openapi";
import { DomainError, notFound } from "../../errors.js";
import { isId, newId } from "../../ids.js";
import { Caps } from "../../limits/caps.js";
import { type Item, type Page, type Table, wsKey } from "../../store/table.js";
import type { IntelModuleName } from "../modules/index.js";
import { type ArtifactDraftSchema, MAX_ARTIFACT_BYTES } from "./contract.js";

/** A module's answer as a client saves it: what `POST /api/intel/{module}` returns as `artifact`. */
export type ArtifactDraft = z.output<typeof ArtifactDraftSchema>;

export type Artifact = ArtifactDraft & { id: string; createdAt: string; updatedAt: string };

/** What lists show: enough to pick one, without the (large) output. */
export type ArtifactSummary = Omit<Artifact, "output" | "citations">;

export type ArtifactItem = Item & Artifact;

export const ARTIFACT_PREFIX = "ART#";
const artifactKey = (id: string) => `${ARTIFACT_PREFIX}${id}`;

export const toPublic = ({ pk: _pk, sk: _sk, ...artifact }: ArtifactItem): Artifact => artifact;

const toSummary = (item: ArtifactItem): ArtifactSummary => ({
  id: item.id,
  module: item.module,
  title: item.title,
  inputs: item.inputs,
  createdAt: item.createdAt,
  updatedAt: item.updatedAt,
});

/**
 * Saved intel artifacts, one item each in the workspace's partition; ids sort by creation time.
 * Each takes a slot of the workspace's artifacts cap (`MAX_ARTIFACTS_PER_WORKSPACE`).
 */
export class Artifacts {
  private readonly caps: Caps;

  constructor(
    private readonly table: Table,
    caps?: Caps,
  ) {
    this.caps = caps ?? new Caps(table);
  }

  /** Refuses (`limit_reached`) when the workspace holds its cap: before a generation saves one. */
  ensureRoom(workspaceId: string): Promise<void> {
    return this.caps.ensureRoom(workspaceId, "artifacts");
  }

  async create(workspaceId: string, draft: ArtifactDraft): Promise<Artifact> {
    const bytes = Buffer.byteLength(JSON.stringify(draft));
    if (bytes > MAX_ARTIFACT_BYTES) {
      throw new DomainError("payload_too_large", "The artifact is too large to save", {
        details: { bytes, limit: MAX_ARTIFACT_BYTES },
      });
    }
    const id = newId("artifact");
    const now = new Date().toISOString();
    const artifact: Artifact = { id, ...draft, createdAt: now, updatedAt: now };
    await this.caps.take(workspaceId, "artifacts");
    await this.table.put({ pk: wsKey(workspaceId), sk: artifactKey(id), ...artifact });
    return artifact;
  }

  async get(workspaceId: string, id: string): Promise<Artifact> {
    const item =
      isId("artifact", id) &&
      (await this.table.get<ArtifactItem>(wsKey(workspaceId), artifactKey(id)));
    if (!item) throw notFound("artifact", id);
    return toPublic(item);
  }

  /** Newest first, optionally of some modules only. */
  async list(
    workspaceId: string,
    modules: readonly IntelModuleName[] | undefined,
    limit: number,
    cursor?: string,
  ): Promise<Page<ArtifactSummary>> {
    const page = await this.table.page<ArtifactItem>({
      pk: wsKey(workspaceId),
      skPrefix: ARTIFACT_PREFIX,
      limit,
      cursor,
      newestFirst: true,
      anyOf: { module: modules },
    });
    return { items: page.items.map(toSummary), nextCursor: page.nextCursor };
  }

  async rename(workspaceId: string, id: string, title: string): Promise<Artifact> {
    const item =
      isId("artifact", id) &&
      (await this.table.update<ArtifactItem>(wsKey(workspaceId), artifactKey(id), {
        title,
        updatedAt: new Date().toISOString(),
      }));
    if (!item) throw notFound("artifact", id);
    return toPublic(item);
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    const deleted =
      isId("artifact", id) && (await this.table.delete(wsKey(workspaceId), artifactKey(id)));
    if (!deleted) throw notFound("artifact", id);
    await this.caps.release(workspaceId, "artifacts");
  }
}
