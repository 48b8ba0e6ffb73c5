// CodeMirror on demand (see editor.js): `codeMirror()` is the promise of codemirror.js's module,
// imported once; `afterLoad(fn)` runs fn once the page's load event has passed.
/* global CODEMIRROR_VERSION */
let loading = null;

export function codeMirror() {
  loading ??= import(new URL(`./codemirror.js?v=${CODEMIRROR_VERSION}`, import.meta.url).href);
  return loading;
}

export function afterLoad(fn) {
  if (document.readyState === "complete") setTimeout(fn, 0);
  else window.addEventListener("load", () => setTimeout(fn, 0), { once: true });
}
