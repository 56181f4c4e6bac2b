import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Test files run in parallel, each with its own database. Vitest's default is one fork fewer
    // than the cores (1 on a 2-core machine); the files mostly wait on child processes, sockets and
    // timers, so three forks keep both cores busy.
    fileParallelism: true,
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
  },
});
