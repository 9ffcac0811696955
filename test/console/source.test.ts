import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { transformSync } from "esbuild";
import { describe, expect, it } from "vitest";
import { parseAst } from "vitest/node";

/**
 * How the console's source reads: top-down. A function, class or variable of a file is never
 * named above its declaration, not even inside a function that runs later (Biome's
 * `noInvalidUseBeforeDeclaration` only catches what would throw, and has no option for the rest).
 * A reference inside its own declaration (recursion, a panel's methods calling each other through
 * the panel) is fine: it is read after the name.
 */

const APP = join(import.meta.dirname, "../../lib/console/app");

interface Node {
  type: string;
  start: number;
  [key: string]: unknown;
}

interface Binding {
  start: number;
  /** Parameters and imports are declared before anything in their scope can name them. */
  checked: boolean;
}

class Scope {
  readonly bindings = new Map<string, Binding>();
  constructor(readonly parent?: Scope) {}

  find(name: string): Binding | undefined {
    return this.bindings.get(name) ?? this.parent?.find(name);
  }
}

const isNode = (value: unknown): value is Node =>
  typeof value === "object" && value !== null && typeof (value as Node).type === "string";

const children = (node: Node): Node[] =>
  Object.values(node).flatMap((value) => (Array.isArray(value) ? value : [value]).filter(isNode));

/** The names a binding pattern declares (`a`, `{ a, b: c }`, `[a, ...rest]`, `a = 1`). */
function names(pattern: Node): Node[] {
  switch (pattern.type) {
    case "Identifier":
      return [pattern];
    case "ObjectPattern":
      return (pattern.properties as Node[]).flatMap((p) =>
        names((p.type === "RestElement" ? p.argument : p.value) as Node),
      );
    case "ArrayPattern":
      return (pattern.elements as Array<Node | null>).flatMap((e) => (e ? names(e) : []));
    case "RestElement":
      return names(pattern.argument as Node);
    case "AssignmentPattern":
      return names(pattern.left as Node);
    default:
      return [];
  }
}

/** Declares what a list of statements declares in their scope, before any of it is read. */
function declare(scope: Scope, statements: Node[]): void {
  for (const statement of statements) {
    const node = (
      statement.type.startsWith("Export") ? statement.declaration : statement
    ) as Node | null;
    if (!node) continue;
    if (node.type === "VariableDeclaration") {
      for (const d of node.declarations as Node[]) {
        for (const id of names(d.id as Node)) {
          scope.bindings.set(id.name as string, { start: id.start, checked: true });
        }
      }
    } else if (node.type === "FunctionDeclaration" || node.type === "ClassDeclaration") {
      const id = node.id as Node;
      scope.bindings.set(id.name as string, { start: id.start, checked: true });
    } else if (node.type === "ImportDeclaration") {
      for (const s of node.specifiers as Node[]) {
        scope.bindings.set((s.local as Node).name as string, { start: 0, checked: false });
      }
    }
  }
}

/**
 * Names used above their declaration in a module's code: JavaScript, so a file's types are
 * stripped first (the lines named are the stripped code's).
 */
function usesBeforeDeclaration(code: string): string[] {
  const found: string[] = [];
  const line = (at: number) => code.slice(0, at).split("\n").length;

  function walk(node: Node, scope: Scope) {
    const all = (nodes: Node[], within = scope) => {
      for (const n of nodes) walk(n, within);
    };
    switch (node.type) {
      case "Identifier": {
        const name = node.name as string;
        const binding = scope.find(name);
        if (binding?.checked && node.start < binding.start) {
          found.push(`${name} (line ${line(node.start)}, declared on line ${line(binding.start)})`);
        }
        return;
      }
      case "Program":
      case "BlockStatement":
      case "StaticBlock": {
        const inner = new Scope(scope);
        declare(inner, node.body as Node[]);
        return all(node.body as Node[], inner);
      }
      case "SwitchStatement": {
        walk(node.discriminant as Node, scope);
        const inner = new Scope(scope);
        const cases = node.cases as Node[];
        declare(
          inner,
          cases.flatMap((c) => c.consequent as Node[]),
        );
        return all(cases, inner);
      }
      case "ForStatement":
      case "ForInStatement":
      case "ForOfStatement": {
        const inner = new Scope(scope);
        declare(inner, [(node.init ?? node.left) as Node].filter(isNode));
        return all(children(node), inner);
      }
      case "CatchClause": {
        const inner = new Scope(scope);
        if (node.param) {
          for (const id of names(node.param as Node)) {
            inner.bindings.set(id.name as string, { start: id.start, checked: false });
          }
        }
        return walk(node.body as Node, inner);
      }
      case "FunctionDeclaration":
      case "FunctionExpression":
      case "ArrowFunctionExpression": {
        const inner = new Scope(scope);
        if (node.type === "FunctionExpression" && node.id) {
          const id = node.id as Node;
          inner.bindings.set(id.name as string, { start: id.start, checked: false });
        }
        for (const param of node.params as Node[]) {
          for (const id of names(param)) {
            inner.bindings.set(id.name as string, { start: id.start, checked: false });
          }
        }
        for (const param of node.params as Node[]) walkPattern(param, inner);
        const body = node.body as Node;
        if (body.type !== "BlockStatement") return walk(body, inner);
        declare(inner, body.body as Node[]);
        return all(body.body as Node[], inner);
      }
      case "ClassDeclaration":
      case "ClassExpression":
        if (node.superClass) walk(node.superClass as Node, scope);
        return walk(node.body as Node, scope);
      case "VariableDeclarator":
        walkPattern(node.id as Node, scope);
        if (node.init) walk(node.init as Node, scope);
        return;
      case "MemberExpression":
        walk(node.object as Node, scope);
        if (node.computed) walk(node.property as Node, scope);
        return;
      case "Property":
      case "MethodDefinition":
      case "PropertyDefinition":
        if (node.computed) walk(node.key as Node, scope);
        if (node.value) walk(node.value as Node, scope);
        return;
      case "ImportDeclaration":
      case "ExportAllDeclaration":
      case "LabeledStatement":
      case "BreakStatement":
      case "ContinueStatement":
      case "MetaProperty":
        if (node.type === "LabeledStatement") walk(node.body as Node, scope);
        return;
      case "ExportNamedDeclaration":
      case "ExportDefaultDeclaration":
        if (node.declaration) walk(node.declaration as Node, scope);
        return;
      default:
        return all(children(node));
    }
  }

  /** A declared pattern: only its default values and computed keys are read. */
  function walkPattern(pattern: Node, scope: Scope): void {
    if (pattern.type === "AssignmentPattern") {
      walkPattern(pattern.left as Node, scope);
      walk(pattern.right as Node, scope);
    } else if (pattern.type === "ObjectPattern") {
      for (const p of pattern.properties as Node[]) {
        if (p.type === "RestElement") continue;
        if (p.computed) walk(p.key as Node, scope);
        walkPattern(p.value as Node, scope);
      }
    } else if (pattern.type === "ArrayPattern") {
      for (const e of pattern.elements as Array<Node | null>) if (e) walkPattern(e, scope);
    }
  }

  walk(parseAst(code) as unknown as Node, new Scope());
  return found;
}

const javascript = (typescript: string) =>
  transformSync(typescript, { loader: "ts", format: "esm", target: "es2022" }).code;

const appFiles = readdirSync(APP, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts"))
  .sort();

describe("the console's source", () => {
  it("is checked by a reader that finds what is named above its declaration", () => {
    expect(usesBeforeDeclaration("function a() { return b(); }\nfunction b() {}")).toEqual([
      "b (line 1, declared on line 2)",
    ]);
    expect(usesBeforeDeclaration("const f = () => g;\nconst g = 1;")).toHaveLength(1);
    expect(usesBeforeDeclaration("el.onclick = () => load();\nasync function load() {}")).toEqual([
      "load (line 1, declared on line 2)",
    ]);
    expect(usesBeforeDeclaration("function f() { if (x) { const y = z; } }\nlet z;")).toHaveLength(
      1,
    );
    // Recursion, a panel's methods through the panel, shadowing, parameters: all read top-down.
    expect(
      usesBeforeDeclaration(
        [
          "function r(n) { return n > 0 ? r(n - 1) : 0; }",
          "const panel = { load() { return panel.more(); }, more: () => 1 };",
          "function g(item) { const list = [item]; return list.map((load) => load); }",
          "const load = 1;",
          "import { h } from './dom.js';",
          "export const el = h('p', { load });",
        ].join("\n"),
      ),
    ).toEqual([]);
  });

  it.each(appFiles)("%s reads top-down: nothing is named above its declaration", (file) => {
    const code = javascript(readFileSync(join(APP, file), "utf8"));
    expect(usesBeforeDeclaration(code), relative(process.cwd(), join(APP, file))).toEqual([]);
  });
});
