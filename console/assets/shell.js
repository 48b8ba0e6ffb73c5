// The shell's behaviours: the sidebar's "Menu" disclosure at phone width (a button with aria-expanded
// that shows or hides the sidebar's body; Escape closes it and returns focus to the button), and
// relative times ("3 minutes ago", console.display.when) kept current while a page stays open.
const toggle = () => document.querySelector(".menu-toggle");

function setOpen(open) {
  const button = toggle();
  const sidebar = button?.closest("[data-sidebar]");
  if (!button || !sidebar) return;
  button.setAttribute("aria-expanded", String(open));
  sidebar.classList.toggle("open", open);
}

document.addEventListener("click", (event) => {
  const button = event.target.closest?.(".menu-toggle");
  if (button) setOpen(button.getAttribute("aria-expanded") !== "true");
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const button = toggle();
  const sidebar = button?.closest("[data-sidebar]");
  if (!sidebar?.classList.contains("open") || !sidebar.contains(document.activeElement)) return;
  setOpen(false);
  button.focus();
});

// Relative times: the server wrote them when it rendered the page; a minute later they would lie.
const UNITS = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
const words = new Intl.RelativeTimeFormat("en", { numeric: "always" });

function relative(then) {
  const seconds = (then - Date.now()) / 1000;
  if (Math.abs(seconds) < 10) return "just now";
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size * 0.85 || unit === "second") return words.format(Math.round(seconds / size), unit);
  }
  return "";
}

function refreshTimes() {
  for (const time of document.querySelectorAll("time[datetime][title]:not([data-absolute])")) {
    const then = Date.parse(time.getAttribute("datetime"));
    if (Number.isNaN(then) || time.textContent === time.title) continue;
    const text = relative(then);
    if (text && text !== time.textContent) time.textContent = text;
  }
}
setInterval(refreshTimes, 60_000);

// Progress (issue 31, point 11): while an htmx request is out, the element that sent it (a button, or
// a form and its submit button) says so: aria-busy for assistive technology, a spinner from the
// stylesheet (button[aria-busy]) for everyone. An answer within 200 ms never shows it for long.
function busy(element, on) {
  if (!(element instanceof Element)) return;
  const targets = [element];
  if (element.tagName === "FORM") targets.push(...element.querySelectorAll('button[type="submit"], button:not([type])'));
  for (const target of targets) {
    if (on) target.setAttribute("aria-busy", "true");
    else target.removeAttribute("aria-busy");
  }
}
document.addEventListener("htmx:beforeRequest", (event) => busy(event.detail?.elt, true));
document.addEventListener("htmx:afterRequest", (event) => busy(event.detail?.elt, false));
