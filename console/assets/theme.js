// The theme switch (System, Light, Dark), remembered in localStorage. Built on its own
// (dist/theme.js) and loaded by a blocking script in <head>, so that the chosen theme is on <html>
// (data-theme="light" | "dark") before the body is painted; "System" removes it and the stylesheet
// follows prefers-color-scheme. Not imported by console.js: it must run before the page, not after.
const KEY = "toolsmith-theme";
const CHOICES = ["system", "light", "dark"];

function stored() {
  try {
    const value = window.localStorage.getItem(KEY);
    return CHOICES.includes(value) ? value : "system";
  } catch {
    return "system"; // storage refused (a private window's policy): the system's theme
  }
}

function apply(choice) {
  const root = document.documentElement;
  if (choice === "light" || choice === "dark") root.dataset.theme = choice;
  else delete root.dataset.theme;
}

apply(stored());

document.addEventListener("change", (event) => {
  const select = event.target.closest?.("[data-theme-switch]");
  if (!select) return;
  const choice = CHOICES.includes(select.value) ? select.value : "system";
  try {
    if (choice === "system") window.localStorage.removeItem(KEY);
    else window.localStorage.setItem(KEY, choice);
  } catch { /* not remembered, but applied to this page */ }
  apply(choice);
});

// The switch shows the choice in force once the page is there.
document.addEventListener("DOMContentLoaded", () => {
  for (const select of document.querySelectorAll("[data-theme-switch]")) select.value = stored();
});
// Another tab changed it: follow.
window.addEventListener("storage", (event) => {
  if (event.key !== KEY) return;
  const choice = stored();
  apply(choice);
  for (const select of document.querySelectorAll("[data-theme-switch]")) select.value = choice;
});
