/**
 * The JSON object in a model's answer: the whole text, else a fenced ```json block, else the span
 * from the first `{` to the last `}` (servers that ignore `response_format` wrap JSON in prose).
 * Answers whether it had to be dug out, which tells that the server ignored the format.
 */
export function extractJson(text: string): { json: unknown; wrapped: boolean } | undefined {
  const attempts: string[] = [text];
  const fence = text.indexOf("```");
  if (fence >= 0) {
    const start = text.indexOf("\n", fence);
    const end = start < 0 ? -1 : text.indexOf("```", start);
    if (end > start) attempts.push(text.slice(start + 1, end));
  }
  const open = text.indexOf("{");
  const close = text.lastIndexOf("}");
  if (open >= 0 && close > open) attempts.push(text.slice(open, close + 1));
  for (const [i, candidate] of attempts.entries()) {
    try {
      return { json: JSON.parse(candidate), wrapped: i > 0 };
    } catch {
      // the next way of finding it
    }
  }
  return undefined;
}
