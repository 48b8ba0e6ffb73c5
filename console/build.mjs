// Builds the console's browser assets into static/dist/ (run by `make install` after `npm ci`):
// console.js (htmx and the page behaviours, on every page), theme.js (the chosen theme, before the
// first paint), editor.js (the module workspace's behaviours, on the pages that edit or compare code),
// codemirror.js (CodeMirror, which editor.js imports after the page's load event), and Swagger UI's
// files for the offline /docs. Nothing is
// fetched from another host at run time; sizes (gzipped) are written to dist/sizes.json.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync, readdirSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "static", "dist");
mkdirSync(out, { recursive: true });

// A kind's console behaviours live in its package (toolkinds/<kind>/assets/*.js); console.js imports
// them all as `toolsmith:kinds`, in the kinds' and files' alphabetical order.
const kinds = join(here, "..", "toolkinds");
const kindAssets = readdirSync(kinds, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(kinds, entry.name, "assets")))
  .map((entry) => entry.name)
  .sort()
  .flatMap((kind) => readdirSync(join(kinds, kind, "assets")).filter((name) => name.endsWith(".js")).sort()
    .map((name) => join(kinds, kind, "assets", name)));
const kindsModule = {
  name: "toolsmith-kinds",
  setup(bundle) {
    bundle.onResolve({ filter: /^toolsmith:kinds$/ }, () => ({ path: "kinds", namespace: "toolsmith" }));
    bundle.onLoad({ filter: /.*/, namespace: "toolsmith" }, () => ({
      contents: kindAssets.map((path) => `import ${JSON.stringify(path)};`).join("\n"),
      resolveDir: here,
    }));
  },
};

const common = {
  bundle: true,
  format: "esm",
  minify: true,
  sourcemap: false,
  target: ["chrome120", "firefox120", "safari17"],
  outdir: out,
  legalComments: "linked",
  logLevel: "warning",
};
// CodeMirror first, a bundle of its own: editor.js imports it by a URL that carries the hash of its
// bytes, computed as console.pages.Pages.version computes a static file's (sha256, 12 hex digits),
// so that the browser keeps it as long as every versioned asset (console.security.VersionedAssets).
await build({ ...common, entryPoints: { codemirror: join(here, "assets", "codemirror.js") } });
const codemirrorVersion = createHash("sha256").update(readFileSync(join(out, "codemirror.js"))).digest("hex").slice(0, 12);

await build({
  entryPoints: { console: join(here, "assets", "console.js"), editor: join(here, "assets", "editor.js"), theme: join(here, "assets", "theme.js") },
  define: { CODEMIRROR_VERSION: JSON.stringify(codemirrorVersion) },
  bundle: true,
  format: "esm",
  minify: true,
  sourcemap: false,
  target: ["chrome120", "firefox120", "safari17"],
  outdir: out,
  legalComments: "linked",
  logLevel: "warning",
  plugins: [kindsModule],
  // The kinds' assets sit outside console/: their bare imports (htmx.org) resolve to the console's packages.
  nodePaths: [join(here, "node_modules")],
});

// One stylesheet for every page, dist/console.css: the design system (static/console.css) first, then
// each part of the console's own styles (styles/*.css), then the kinds' (toolkinds/<kind>/styles/*.css),
// each in alphabetical order, so a part's rules may build on the tokens and components before it.
const styleFiles = (dir) => existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".css")).sort().map((name) => join(dir, name)) : [];
const stylesheets = [
  join(here, "static", "console.css"),
  ...styleFiles(join(here, "styles")),
  ...readdirSync(kinds, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort()
    .flatMap((kind) => styleFiles(join(kinds, kind, "styles"))),
];
await build({
  stdin: { contents: stylesheets.map((path) => `@import ${JSON.stringify(path)};`).join("\n"), loader: "css", resolveDir: here },
  bundle: true,
  minify: true,
  target: ["chrome120", "firefox120", "safari17"],
  outfile: join(out, "console.css"),
  logLevel: "warning",
});

const swagger = join(here, "node_modules", "swagger-ui-dist");
for (const name of ["swagger-ui-bundle.js", "swagger-ui.css"]) {
  copyFileSync(join(swagger, name), join(out, name));
}

const sizes = {};
for (const name of readdirSync(out).sort()) {
  if (!/\.(js|css)$/.test(name)) continue;
  const bytes = readFileSync(join(out, name));
  sizes[name] = { bytes: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
}
writeFileSync(join(out, "sizes.json"), JSON.stringify(sizes, null, 2) + "\n");
for (const [name, size] of Object.entries(sizes)) {
  console.log(`console asset ${name}: ${size.bytes} bytes, ${size.gzipped} gzipped`);
}
