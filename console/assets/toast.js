// Toasts (console/toast.py asks for them): a short note after an action, in the shell's live region
// (#toasts, role=status, aria-live=polite), with an Undo button where the server offers one. A toast
// arrives as an htmx trigger (`toast`, on an answer swapped in place) or as a cookie read once when a
// page loads or an htmx request followed a redirect. It leaves after SHOWN_MS, but not while the
// pointer is on it or focus is in it; Escape or its × closes it.
//
// Undo: a POST of the toast's fields with the session's CSRF token (a header and a field, as every
// console form), by fetch; then the page follows the answer's redirect, or reloads if it had none, so
// that every region the undone action changed is shown as it now is. A refusal is shown as a toast.

const COOKIE = "toolsmith_toast";
const SHOWN_MS = 6000;

const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content ?? "";

function region() {
  let found = document.getElementById("toasts");
  if (!found) {
    // A page without the shell (sign-in, an error): the region is made once, before any toast is put in it.
    found = document.createElement("div");
    found.id = "toasts";
    found.className = "toasts";
    found.setAttribute("role", "status");
    found.setAttribute("aria-live", "polite");
    document.body.append(found);
  }
  return found;
}

export function showToast({ text, kind = "success", undo = null } = {}) {
  if (typeof text !== "string" || !text) return null;
  const item = document.createElement("div");
  item.className = `toast toast-${["success", "info", "warning", "error"].includes(kind) ? kind : "info"}`;
  const words = document.createElement("p");
  words.className = "toast-text";
  words.textContent = text; // text, never markup: a toast may quote a name the admin typed
  item.append(words);
  if (undo && typeof undo.url === "string" && undo.url.startsWith("/console/")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button secondary small toast-undo";
    button.textContent = undo.label || "Undo";
    button.addEventListener("click", () => runUndo(button, undo, item));
    item.append(button);
  }
  const close = document.createElement("button");
  close.type = "button";
  close.className = "button ghost small toast-close";
  close.setAttribute("aria-label", "Dismiss");
  close.textContent = "×";
  close.addEventListener("click", () => dismiss(item));
  item.append(close);
  region().append(item);
  schedule(item);
  return item;
}

function dismiss(item) {
  clearTimeout(item._timer);
  const hadFocus = item.contains(document.activeElement);
  item.remove();
  if (hadFocus) document.getElementById("main")?.focus();
}

// The countdown stops while a person is reading or about to press a button, and starts again after.
function schedule(item) {
  const start = () => {
    clearTimeout(item._timer);
    item._timer = setTimeout(() => dismiss(item), SHOWN_MS);
  };
  const stop = () => clearTimeout(item._timer);
  item.addEventListener("mouseenter", stop);
  item.addEventListener("focusin", stop);
  item.addEventListener("mouseleave", () => { if (!item.contains(document.activeElement)) start(); });
  item.addEventListener("focusout", (event) => { if (!item.contains(event.relatedTarget) && !item.matches(":hover")) start(); });
  start();
}

async function runUndo(button, undo, item) {
  button.disabled = true;
  item.setAttribute("aria-busy", "true");
  const body = new URLSearchParams(undo.fields || {});
  body.set("csrf_token", csrf());
  let answer;
  try {
    answer = await fetch(undo.url, {
      method: "POST", body, credentials: "same-origin", redirect: "follow",
      headers: { "X-CSRF-Token": csrf(), Accept: "text/html, application/problem+json" },
    });
  } catch {
    answer = null;
  }
  if (answer && answer.ok) {
    if (answer.redirected) window.location.assign(answer.url);
    else window.location.reload();
    return;
  }
  dismiss(item);
  showToast({ text: await refusal(answer), kind: "error" });
}

async function refusal(answer) {
  if (!answer) return "Undo failed: the server did not answer. Try again.";
  if ((answer.headers.get("content-type") || "").includes("json")) {
    try {
      const problem = await answer.json();
      if (problem.detail || problem.title) return `Undo failed: ${problem.detail || problem.title}`;
    } catch { /* not JSON after all: the status says enough */ }
  }
  return `Undo failed (${answer.status}). Reload the page to see where things stand.`;
}

// The cookie a redirect left (console/toast.py): read once, then deleted.
function fromCookie() {
  const pair = document.cookie.split("; ").find((part) => part.startsWith(`${COOKIE}=`));
  if (!pair) return;
  document.cookie = `${COOKIE}=; Max-Age=0; Path=/console; SameSite=Strict`;
  try {
    showToast(JSON.parse(decodeURIComponent(pair.slice(COOKIE.length + 1))));
  } catch { /* a cookie that is not a toast shows nothing */ }
}

document.addEventListener("toast", (event) => {
  const detail = event.detail && typeof event.detail.value === "string" ? { text: event.detail.value } : event.detail;
  showToast(detail || {});
});
// After an htmx request that followed a redirect, the cookie is this page's; not after an answer that
// leaves the page (HX-Redirect): the next page reads it.
document.addEventListener("htmx:afterRequest", (event) => {
  if (!event.detail?.xhr?.getResponseHeader("HX-Redirect")) fromCookie();
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || event.defaultPrevented) return;
  const toasts = document.querySelectorAll("#toasts .toast");
  if (!toasts.length) return;
  const inside = event.target.closest?.(".toast");
  // Escape in an open dialog is the dialog's; anywhere else it closes the newest toast.
  if (!inside && document.querySelector("dialog[open]")) return;
  dismiss(inside || toasts[toasts.length - 1]);
});
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fromCookie);
else fromCookie();
