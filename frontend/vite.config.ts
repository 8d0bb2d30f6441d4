// Built by scripts/setup-ui.sh (`npm run build`) into the Python package's static files.
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const out = fileURLToPath(new URL("../src/flightlog/server/static/ui", import.meta.url));

/** src/prefetch.ts as an entry of its own, listed in the page before the app (async: it runs as
 *  soon as it arrives, while the app's larger code is still being fetched and compiled). */
function prefetchFirst(): Plugin {
  return {
    name: "flightlog-prefetch-first",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler(html, ctx) {
        const chunk = Object.values(ctx.bundle ?? {}).find((c) => c.type === "chunk" && c.isEntry && c.name === "prefetch");
        if (!chunk) return html;
        return html.replace("<script type=\"module\"", `<script type="module" async crossorigin src="./${chunk.fileName}"></script>\n    <script type="module"`);
      },
    },
  };
}

export default defineConfig({
  // relative asset URLs: the server writes a <base href> into index.html, so the UI works
  // at / and behind a proxy's sub-path (flightlog server --root-path) alike
  base: "./",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  plugins: [prefetchFirst()],
  build: {
    rollupOptions: { input: { index: fileURLToPath(new URL("index.html", import.meta.url)), prefetch: fileURLToPath(new URL("src/prefetch.ts", import.meta.url)) } },
    outDir: out,
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 400,
    reportCompressedSize: false,
  },
  server: { proxy: { "/api": process.env.FLIGHTLOG_URL || "http://127.0.0.1:8765" } },
});
