// Built by scripts/setup-ui.sh (`npm run build`) into the Python package's static files.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const out = fileURLToPath(new URL("../src/flightlog/server/static/ui", import.meta.url));

export default defineConfig({
  // relative asset URLs: the server writes a <base href> into index.html, so the UI works
  // at / and behind a proxy's sub-path (flightlog server --root-path) alike
  base: "./",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: out,
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 400,
    reportCompressedSize: false,
  },
  server: { proxy: { "/api": process.env.FLIGHTLOG_URL || "http://127.0.0.1:8765" } },
});
