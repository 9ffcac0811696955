/**
 * The Markdown the exports write, as a Word document: `#` headings, `- ` bullets, `> ` quotes,
 * `| a | b |` tables and `**bold**` runs, the only constructs those writers use. `docx` is loaded
 * when a DOCX is asked for, so a function that serves JSON never pays for parsing it.
 */
export async function markdownToDocx(markdown: string): Promise<Uint8Array> {
  const { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow, TextRun } =
    await import("docx");
  const HEADINGS = [
    HeadingLevel.TITLE,
    HeadingLevel.HEADING_1,
    HeadingLevel.HEADING_2,
    HeadingLevel.HEADING_3,
    HeadingLevel.HEADING_4,
    HeadingLevel.HEADING_5,
  ];
  // `**bold**` splits a line into alternating plain and bold runs.
  const runs = (text: string) =>
    text.split("**").map((part, i) => new TextRun({ text: part, bold: i % 2 === 1 }));
  const cells = (line: string) =>
    line
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((c) => c.trim());
  const blocks: (InstanceType<typeof Paragraph> | InstanceType<typeof Table>)[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const heading = /^(#{1,6}) (.*)$/.exec(line);
    if (heading) {
      const level = HEADINGS[(heading[1]?.length ?? 1) - 1];
      blocks.push(new Paragraph({ heading: level, children: runs(heading[2] ?? "") }));
    } else if (line.startsWith("- ")) {
      blocks.push(new Paragraph({ bullet: { level: 0 }, children: runs(line.slice(2)) }));
    } else if (line.startsWith("> ")) {
      blocks.push(new Paragraph({ style: "Quote", children: runs(line.slice(2)) }));
    } else if (line.startsWith("|")) {
      // A table runs to its last `|` line; the `| --- |` separator row is not content.
      const rows: string[][] = [];
      for (; i < lines.length && lines[i]?.startsWith("|"); i++)
        if (!/^\|[\s\-|:]+\|$/.test(lines[i] ?? "")) rows.push(cells(lines[i] ?? ""));
      i--;
      blocks.push(
        new Table({
          rows: rows.map(
            (row, r) =>
              new TableRow({
                tableHeader: r === 0,
                children: row.map(
                  (text) =>
                    new TableCell({
                      children: [
                        new Paragraph({ children: [new TextRun({ text, bold: r === 0 })] }),
                      ],
                    }),
                ),
              }),
          ),
        }),
      );
    } else if (line.trim()) {
      blocks.push(new Paragraph({ children: runs(line) }));
    }
  }
  const document = new Document({ sections: [{ children: blocks }] });
  return Packer.toBuffer(document);
}
