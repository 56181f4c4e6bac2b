import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import { classifyTestFiles } from "./test/support/database-use.js";
import base from "./vitest.config.js";

/**
 * The PostgreSQL + Redis pass of CI (`.ci/run`): the suite of vitest.config.ts less the test files
 * that never reach the test database nor Redis (test/support/database-use.ts finds them from their
 * imports at every run; test/architecture/database-use.test.ts checks the finding). Those run the same
 * code on both passes, and the embedded pass (`npm test`) has run them already.
 */
const { free } = classifyTestFiles(fileURLToPath(new URL(".", import.meta.url)));

export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: [...configDefaults.exclude, ...free],
    },
  }),
);
