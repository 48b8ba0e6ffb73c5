// The lifecycle part's code island: the publish review's and the history's merge views
// ([data-lifecycle-diff]), each pane labelled for assistive technology (CodeMirror's content
// element is a textbox and needs a name).
//
// The merge view is mounted in a shadow root: CodeMirror (style-mod) injects its styles as a
// <style> element into a document, which the console's CSP (`style-src 'self'`) refuses, but as a
// constructed stylesheet (adoptedStyleSheets, which the CSP allows) into a shadow root.
import { EditorView, basicSetup } from "codemirror";
import { javascript } from "@codemirror/lang-javascript";
import { MergeView } from "@codemirror/merge";
import { EditorState } from "@codemirror/state";

function mountLabelled(element) {
  const a = element.querySelector("[data-diff-a]")?.value ?? "";
  const b = element.querySelector("[data-diff-b]")?.value ?? "";
  const labelled = (label) => [
    EditorState.readOnly.of(true), EditorView.editable.of(false), basicSetup, javascript(),
    EditorView.contentAttributes.of({ "aria-label": label }),
  ];
  const host = document.createElement("div");
  element.appendChild(host);
  const shadow = host.attachShadow({ mode: "open" });
  const parent = document.createElement("div");
  shadow.appendChild(parent);
  return new MergeView({
    a: { doc: a, extensions: labelled(element.dataset.labelA || "Before") },
    b: { doc: b, extensions: labelled(element.dataset.labelB || "After") },
    parent,
    root: shadow,
  });
}

function mountAll(root) {
  for (const element of root.querySelectorAll("[data-lifecycle-diff]:not([data-mounted])")) {
    element.dataset.mounted = "true";
    mountLabelled(element);
  }
}

document.addEventListener("DOMContentLoaded", () => mountAll(document));
document.addEventListener("htmx:afterSettle", (event) => mountAll(event.target));
