import { expect, it } from "vitest";
import type { App } from "../../src/http/app-types.js";
import { call, startTestService } from "../support/harness.js";

it("graceful stop: in-flight requests finish, new connections are refused, pools close", async () => {
  let entered!: () => void;
  const inHandler = new Promise<void>((r) => {
    entered = r;
  });
  const slow = (app: App) =>
    app.get("/api/v1/public/test-slow", { config: { tier: "standard" } }, async () => {
      entered();
      await new Promise((r) => setTimeout(r, 300));
      return { success: true, data: { finished: true } };
    });
  const svc = await startTestService({ extraRoutes: slow });
  const inflight = call(svc.urls.production, "/api/v1/public/test-slow");
  await inHandler;
  const stopped = svc.proc.stop();
  const res = await inflight;
  expect(res.status).toBe(200);
  expect(res.body.data.finished).toBe(true);
  await stopped;
  await expect(fetch(`${svc.urls.production}/healthz`)).rejects.toThrow();
  await svc.close();
});
