// The console's behaviours on every page: htmx (with the session's CSRF token on each request), and
// small progressive enhancements wired by data attributes, never by inline script (the CSP has none).
import htmx from "htmx.org";
import "./playground.js";
import "./changesets.js";
import "./toast.js";
import "./servers.js";
import "./shell.js";
import "./palette.js";
import "./audit.js";
// Each kind's own behaviours (toolkinds/<kind>/assets/*.js), gathered by build.mjs: the console names no kind.
import "toolsmith:kinds";

window.htmx = htmx;

const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content ?? "";

document.addEventListener("htmx:configRequest", (event) => {
  event.detail.headers["X-CSRF-Token"] = csrf();
});

// Dialogs: a button with data-open-dialog="id" opens that <dialog> modally; data-close-dialog closes
// the one it is in. The browser returns focus to the opener when a modal dialog closes.
document.addEventListener("click", (event) => {
  const opener = event.target.closest("[data-open-dialog]");
  if (opener) {
    const dialog = document.getElementById(opener.dataset.openDialog);
    if (dialog && !dialog.open) {
      event.preventDefault();
      dialog.showModal();
      dialog.dispatchEvent(new CustomEvent("console:opened", { bubbles: true }));
    }
    return;
  }
  const closer = event.target.closest("[data-close-dialog]");
  if (closer) {
    event.preventDefault();
    closer.closest("dialog")?.close();
    return;
  }
  const copy = event.target.closest("[data-copy]");
  if (copy) {
    const source = document.getElementById(copy.dataset.copy);
    const text = source ? (source.value ?? source.textContent) : "";
    navigator.clipboard?.writeText(text).then(
      () => announce(copy, "Copied"),
      () => announce(copy, "Copy failed: select the text and copy it"),
    );
  }
});

// A server answer may ask for a dialog to open (HX-Trigger: {"console:open-dialog": "id"}).
document.body?.addEventListener("console:open-dialog", (event) => {
  const id = typeof event.detail === "string" ? event.detail : event.detail?.value;
  const dialog = id && document.getElementById(id);
  if (dialog && !dialog.open) dialog.showModal();
});
document.addEventListener("console:open-dialog", (event) => {
  const id = typeof event.detail === "string" ? event.detail : event.detail?.value;
  const dialog = id && document.getElementById(id);
  if (dialog && !dialog.open) dialog.showModal();
});

function announce(element, message) {
  const target = document.getElementById(element.dataset.status || "") || element;
  if (target !== element) target.textContent = message;
  else element.setAttribute("aria-label", message);
}

export { htmx, csrf };
