// The audit viewer (console/templates/audit/): a row's "Show change" button opens the row below it,
// where htmx loads the change once (hx-trigger="click once"); pressed again it hides it. The button
// says which with aria-expanded.
document.addEventListener("click", (event) => {
  const button = event.target.closest?.(".audit-toggle");
  if (!button) return;
  const row = button.closest("tr")?.nextElementSibling;
  if (!row?.classList.contains("audit-change-row")) return;
  const open = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", String(open));
  row.hidden = !open;
  const label = button.firstChild;
  if (label?.nodeType === Node.TEXT_NODE) label.textContent = open ? "Hide change" : "Show change";
});

// The filters' URL says only what was chosen: an empty field or the default page size is left out,
// so a shared link reads like the view ("/console/audit?name=addOne").
document.addEventListener("htmx:configRequest", (event) => {
  if (!event.detail.elt?.closest?.(".audit-filters")) return;
  const params = event.detail.parameters;
  for (const key of ["kind", "name", "who", "since", "until", "size"]) {
    const value = typeof params.get === "function" ? params.get(key) : params[key];
    if (value === "" || (key === "size" && value === "50")) {
      if (typeof params.delete === "function") params.delete(key);
      else delete params[key];
    }
  }
});
