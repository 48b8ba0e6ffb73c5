// The module list's "Publish selected" (B6): says which drafts are ticked, puts the review dialog
// back to its "Checking…" text when it closes (so that a new selection never shows the last
// review), and moves the focus to the outcome of a publish, which replaces the button pressed.
const picks = () => [...document.querySelectorAll("[data-changeset-pick]")];

function showSelection() {
  const status = document.querySelector("[data-selected-status]");
  if (!status) return;
  if (status.dataset.idle === undefined) status.dataset.idle = status.textContent;
  const chosen = picks().filter((box) => box.checked).map((box) => box.value);
  status.textContent = chosen.length === 0
    ? status.dataset.idle
    : `${chosen.length} draft${chosen.length === 1 ? "" : "s"} selected: ${chosen.join(", ")}`;
}

document.addEventListener("change", (event) => {
  if (event.target instanceof Element && event.target.matches("[data-changeset-pick]")) showSelection();
});

document.addEventListener("htmx:afterSettle", (event) => {
  const target = event.detail.target;
  showSelection(); // the list read again (a filter, a publish) has no box ticked
  if (!(target instanceof Element)) return;
  const outcome = target.querySelector("[data-focus-on-load]");
  if (outcome) outcome.focus();
});

document.addEventListener("DOMContentLoaded", () => {
  const dialog = document.getElementById("changeset-dialog");
  const body = document.getElementById("changeset-review");
  if (!dialog || !body) return;
  const waiting = body.innerHTML;
  dialog.addEventListener("close", () => { body.innerHTML = waiting; });
  showSelection();
});
