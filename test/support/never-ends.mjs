/**
 * Content a sandbox thread of endless-worker.mjs never finishes: a task whose input holds this
 * text (a page, a file, a text to chunk) runs until the sandbox ends its thread. Plain JavaScript,
 * so that the thread reads it without a TypeScript loader; its type is in never-ends.d.mts.
 */
export const NEVER_ENDS = "<!-- kb-intel test: this content never ends -->";
