import { describe, expect, it } from "vitest";
import { csvText, guessDelimiter } from "../../lib/files/csv.js";
import { formatTable, looksLikeHeader } from "../../lib/files/records.js";

const limits = { maxRows: 100 };

describe("CSV as records", () => {
  it("names each value by its column when the first row is a header", () => {
    const csv = 'Name,Role,Since\nAda Lovelace,CTO,2019\nGrace Hopper,"VP, Engineering",2020\n';
    expect(csvText(csv, limits)).toBe(
      "Name: Ada Lovelace; Role: CTO; Since: 2019\n\nName: Grace Hopper; Role: VP, Engineering; Since: 2020",
    );
  });

  it("joins cells when the first row is data", () => {
    expect(csvText("2024,10,Berlin\n2025,12,Paris", limits)).toBe(
      "2024 | 10 | Berlin\n\n2025 | 12 | Paris",
    );
  });

  it("leaves out empty values and numbers unnamed extra columns", () => {
    expect(csvText("Name,Role\nAda,,London\n", limits)).toBe("Name: Ada; Column 3: London");
  });

  it("finds semicolon, tab and pipe delimiters", () => {
    expect(guessDelimiter("a;b;c\n1;2;3")).toBe(";");
    expect(guessDelimiter("a\tb\n")).toBe("\t");
    expect(guessDelimiter('"x,y"|b|c')).toBe("|");
    expect(csvText("Stadt;Land\nMünchen;Deutschland", limits)).toBe(
      "Stadt: München; Land: Deutschland",
    );
  });

  it("refuses a CSV with more rows than the limit", () => {
    const csv = ["id,value", ...Array.from({ length: 101 }, (_, i) => `${i},v${i}`)].join("\n");
    expect(() => csvText(csv, limits)).toThrow(
      expect.objectContaining({ code: "too_large", message: "The CSV has more than 100 rows" }),
    );
    expect(() => csvText(csv.split("\n").slice(0, 101).join("\n"), limits)).not.toThrow();
  });

  it("fails clearly on a quote that never closes", () => {
    expect(() => csvText('a,b\n"open,2\n3,4', limits)).toThrow(
      expect.objectContaining({ code: "corrupt" }),
    );
  });
});

describe("header detection", () => {
  it("wants distinct, non-empty, non-numeric names", () => {
    expect(looksLikeHeader(["Name", "Email"])).toBe(true);
    expect(looksLikeHeader(["Name", ""])).toBe(false);
    expect(looksLikeHeader(["2024", "Revenue"])).toBe(false);
    expect(looksLikeHeader(["a", "A"])).toBe(false);
    expect(formatTable([["Only", "Header"]])).toEqual(["Only | Header"]);
  });
});
