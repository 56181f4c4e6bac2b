import path from "node:path";
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/**
 * The merchant dashboard (docs/dashboard.md): `web/` is built into `dist/web/`, which the service
 * serves at `/` (src/http/routes/static-web.ts). `npm run dev:web` serves it with hot reload and
 * proxies the API to a running `npm run dev` (sandbox listener by default).
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const api = process.env.STABLEGATE_API ?? "http://localhost:8081";
// The dev server's pages come from :5173; the API checks the Origin of cookie-authenticated writes,
// so the proxy presents the API's own origin.
const proxied = { target: api, changeOrigin: true, headers: { origin: new URL(api).origin } };

export default defineConfig({
  root: path.join(here, "web"),
  base: "/",
  plugins: [react()],
  build: {
    outDir: path.join(here, "dist/web"),
    emptyOutDir: true,
    manifest: true,
    target: "es2022",
    sourcemap: false,
  },
  server: {
    proxy: { "/api": proxied, "/checkout": proxied, "/pay": proxied, "/wallet": proxied },
  },
});
