import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { type BuildOptions, build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleOptions, REPO_ROOT } from "../../infra/aws/bundle.js";
import { workerScript } from "../../lib/files/sandbox.js";
import { htmlPage, prose } from "../support/sites.js";
import { docxBytes, encryptedPdf, pdfBytes } from "./support/documents.js";

/**
 * The Lambda layout: a function bundled as index.mjs with the project's own esbuild options
 * (infra/aws/bundle.ts), and the sandbox thread bundled beside it as parse-worker.mjs; jsdom, which
 * reads files at run time, is installed beside them rather than bundled (here: NODE_PATH).
 */

/** How the CDK hook (to be added to infra/aws/bundle.ts) builds the parser thread beside a function. */
const parseWorkerBuild = (outdir: string): BuildOptions => ({
  ...bundleOptions("lib/files/parse-worker.ts", ""),
  outfile: undefined,
  outdir,
  entryNames: "parse-worker",
  outExtension: { ".js": ".mjs" },
  // PDF and Word libraries load only for their files: a text file does not compile pdf.js.
  splitting: true,
  chunkNames: "parse-chunks/[name]-[hash]",
});

let dir: string;
/** Source files that went into index.mjs. */
let functionInputs: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "parse-bundle-"));
  const [main] = await Promise.all([
    build(bundleOptions("test/files/support/bundled-parse.ts", join(dir, "index.mjs"))),
    build(parseWorkerBuild(dir)),
  ]);
  functionInputs = Object.keys(main.metafile?.inputs ?? {});
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the parser thread in a bundle", () => {
  it("is found beside the bundle, or through the dev bootstrap when running from sources", () => {
    expect(workerScript("file:///var/task/index.mjs")).toEqual({
      url: new URL("file:///var/task/parse-worker.mjs"),
    });
    expect(workerScript("file:///work/lib/files/sandbox.ts")).toEqual({
      url: new URL("file:///work/lib/files/dev-worker.mjs"),
      entry: "file:///work/lib/files/parse-worker.ts",
    });
  });

  it("leaves the PDF, Word and page-reading libraries out of the function bundle", () => {
    expect(functionInputs.some((path) => path.includes("lib/files/parse.ts"))).toBe(true);
    expect(functionInputs.some((path) => path.includes("lib/web/extract.ts"))).toBe(true);
    const heavy = /unpdf|mammoth|turndown|readability|jsdom|lib\/web\/readable/;
    expect(functionInputs.filter((path) => heavy.test(path))).toEqual([]);
  });

  it("parses PDF and DOCX files and reads pages from bundled code", async () => {
    const files = {
      "guide.pdf": await pdfBytes([
        { heading: "Guide", lines: ["Step one."] },
        { lines: ["Two."] },
      ]),
      "handbook.docx": await docxBytes(),
      "locked.pdf": await encryptedPdf(),
      "page.html": htmlPage("Bundled page", `<article>${prose("Bundled")}</article>`),
    };
    const paths = await Promise.all(
      Object.entries(files).map(async ([name, bytes]) => {
        await writeFile(join(dir, name), bytes);
        return join(dir, name);
      }),
    );
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(dir, "index.mjs"), ...paths],
      { env: { ...process.env, NODE_PATH: join(REPO_ROOT, "node_modules") } },
    );
    const [pdf, docx, locked, page] = JSON.parse(stdout);
    expect(pdf).toEqual({ kind: "pdf", text: "# Guide\nStep one.\fTwo." });
    expect(docx.text).toContain("Name: Ada Lovelace; Role: CTO");
    expect(locked).toMatchObject({ code: "encrypted" });
    expect(page.title).toBe("Bundled page");
    expect(page.markdown).toContain("Bundled paragraph 1");
  });
});
