// Built by scripts/setup-ui.sh (`npm run build`) into the Python package's static files.
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const out = fileURLToPath(new URL("../src/flightlog/server/static/ui", import.meta.url));

/** src/prefetch.ts as an entry of its own, written into the page as an inline classic script
 *  before the app. A script file, even `async`, ran only when the main thread was free: after
 *  the app's code was compiled (60-110 ms into the page), so the first API request waited for it.
 *  Inline, it runs while the page is parsed (~10 ms) and the answer arrives during the compile.
 *  The server's Content-Security-Policy names it by its SHA-256 (flightlog/server/ui.py), so
 *  `script-src` stays 'self' plus this one script. */
function prefetchFirst(): Plugin {
  return {
    name: "flightlog-prefetch-first",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler(html, ctx) {
        const bundle = ctx.bundle ?? {};
        const chunk = Object.values(bundle).find((c) => c.type === "chunk" && c.isEntry && c.name === "prefetch");
        if (!chunk || chunk.type !== "chunk") return html;
        if (chunk.imports.length || chunk.exports.length || /<\/script|<!--/i.test(chunk.code)) {
          throw new Error("src/prefetch.ts must import and export nothing, and never spell a closing script tag");
        }
        delete bundle[chunk.fileName]; // in the page only: no file of its own
        const code = `(()=>{${chunk.code.trim()}})();`;
        return html.replace("<script type=\"module\"", `<script>${code}</script>\n    <script type="module"`);
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
