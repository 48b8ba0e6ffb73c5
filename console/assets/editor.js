// The editor island's entry, on the pages that edit or compare code (a module's page, Create, its
// history, the list's publish review): the module workspace's behaviours at once (module_editor.js),
// and CodeMirror (codemirror.js, a bundle of its own: 0.5 MB, a third of that gzipped) loaded after
// the page's load event, so that the page is shown and usable without waiting for it to be fetched,
// compiled and run. Until it comes, the Source is its plain <textarea> (the form's field in any case:
// what is typed there is kept, focus and caret included); a merge view waits for it.
//
// The bundle's URL carries the hash of its bytes (build.mjs defines CODEMIRROR_VERSION as
// console.pages.Pages.version computes it), so the browser keeps it a year as every versioned asset.
import "./module_editor.js";
import { codeMirror } from "./editor_loader.js";

function mountDiffs(root = document) {
  const diffs = [...root.querySelectorAll("[data-diff]:not([data-mounted])")];
  if (!diffs.length) return;
  for (const element of diffs) element.dataset.mounted = "true";
  codeMirror().then((cm) => { for (const element of diffs) cm.mountDiff(element); });
}

document.addEventListener("DOMContentLoaded", () => mountDiffs());
document.addEventListener("htmx:afterSettle", (event) => mountDiffs(event.target));
