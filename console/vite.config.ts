import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// The build goes straight into the Go package that embeds it (services/gateway/console/dist).
// No sourcemaps: the committed output stays small and reviewable. `npm run dev` proxies the
// API to a running gateway (make up) so the page and the services share one origin.
const gateway = process.env.PLINTH_GATEWAY ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "../services/gateway/console/dist",
    emptyOutDir: true,
    sourcemap: false,
    assetsDir: "assets",
    // One chunk, about 600 kB with Chart.js (README: Charts); warn well before 1 MB.
    chunkSizeWarningLimit: 700,
  },
  server: {
    proxy: {
      "^/(services\\.auth|stats|cnct\\.kaas\\.api|hashicorp\\.vagrant|proto)\\.": gateway,
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
