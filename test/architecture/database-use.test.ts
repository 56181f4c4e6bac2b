import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { classifyTestFiles } from "../support/database-use.js";
import { fixtureRoot } from "./support.js";

// The PostgreSQL pass of CI (vitest.pg.config.ts) leaves out the test files that never reach the
// test database nor Redis, found at every run by test/support/database-use.ts. These tests check
// that finding: on fixtures (each way a file reaches the database) and on the real suite.

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("which test files the PostgreSQL pass leaves out", () => {
  it("a file is database-free only if none of its modules, nor the programs it starts, reach the test database", () => {
    const root = fixtureRoot("sg-database-use-", {
      "test/support/db.ts": "export const url = process.env.TEST_DATABASE_URL;",
      "test/support/harness.ts": 'import { url } from "./db.js";\nexport const h = url;',
      "test/support/pure.ts": "export const add = (a: number, b: number) => a + b;",
      "test/a/direct.test.ts": 'import { url } from "../support/db.js";\nurl;',
      "test/a/through-helper.test.ts": 'import { h } from "../support/harness.js";\nh;',
      "test/a/dynamic.test.ts": 'const m = await import("../support/harness.js");\nm;',
      "test/a/redis.test.ts": "const r = process.env.TEST_REDIS_URL;\nr;",
      "test/a/skips.test.ts": 'import { onPostgres } from "../support/flags.js";\nonPostgres;',
      "test/support/flags.ts": "export const onPostgres = false;",
      "test/a/template.test.ts": 'import { inject } from "vitest";\ninject("templateDatabase");',
      // A child program named by a string literal, which opens the test database.
      "test/a/child.ts": 'import { url } from "../support/db.js";\nurl;',
      "test/a/spawns.test.ts":
        'import { join } from "node:path";\nconst CHILD = join(import.meta.dirname, "child.ts");\nCHILD;',
      // An import that resolves to nothing counts as using the database (conservative).
      "test/a/unresolved.test.ts": 'import { x } from "./missing.js";\nx;',
      // Free: pure imports, packages, JSON, a comment naming db.ts, a program that is pure.
      "test/a/pure.test.ts":
        'import { add } from "../support/pure.js";\nimport data from "./data.json";\n// see test/support/db.ts\nadd(1, 2);\ndata;',
      "test/a/data.json": "{}",
      "test/a/pure-child.ts": "export {};",
      "test/a/spawns-pure.test.ts": 'const CHILD = "test/a/pure-child.ts";\nCHILD;',
      "test/a/package.test.ts":
        'import { describe } from "vitest";\nimport fc from "fast-check";\ndescribe;\nfc;',
    });
    const { free, using } = classifyTestFiles(root);
    expect(free).toEqual(["test/a/package.test.ts", "test/a/pure.test.ts", "test/a/spawns-pure.test.ts"]);
    expect([...using.keys()].sort()).toEqual([
      "test/a/direct.test.ts",
      "test/a/dynamic.test.ts",
      "test/a/redis.test.ts",
      "test/a/skips.test.ts",
      "test/a/spawns.test.ts",
      "test/a/template.test.ts",
      "test/a/through-helper.test.ts",
      "test/a/unresolved.test.ts",
    ]);
    expect(using.get("test/a/through-helper.test.ts")).toBe("test/support/db.ts");
    expect(using.get("test/a/spawns.test.ts")).toBe("test/support/db.ts");
    expect(using.get("test/a/unresolved.test.ts")).toMatch(/cannot resolve \.\/missing\.js/);
  });

  it("on this suite: every file that imports the test database support is kept, and every import resolves", () => {
    const { free, using } = classifyTestFiles(ROOT);
    expect(free.length + using.size).toBe(
      (readdirSync(path.join(ROOT, "test"), { recursive: true }) as string[]).filter((f) =>
        f.endsWith(".test.ts"),
      ).length,
    );
    for (const file of free) {
      const text = readFileSync(path.join(ROOT, file), "utf8");
      expect(text, file).not.toMatch(/support\/db\.js|TEST_DATABASE_URL|TEST_REDIS_URL|startTestService/);
    }
    expect([...using.values()].filter((why) => why.includes("cannot resolve"))).toEqual([]);
    // The pure tests of the domain are among those left out (the list is not empty by accident).
    expect(free).toEqual(expect.arrayContaining(["test/domain/money.test.ts", "test/lib/csv.test.ts"]));
  });

  it("src/ and packages/ never read the test environment (the walk does not follow them into children)", () => {
    const offenders: string[] = [];
    for (const dir of ["src", "packages"]) {
      for (const f of readdirSync(path.join(ROOT, dir), { recursive: true }) as string[]) {
        if (!/\.[cm]?[jt]sx?$/.test(f) || f.includes("node_modules")) continue;
        const text = readFileSync(path.join(ROOT, dir, f), "utf8");
        if (/TEST_DATABASE_URL|TEST_REDIS_URL|templateDatabase|pgliteTemplate/.test(text))
          offenders.push(`${dir}/${f}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
