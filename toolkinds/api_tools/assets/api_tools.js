// The API tool editor (console/templates/api_tools/form.html): rows of parameters, fixed query
// values and headers added from a <template> and removed (focus goes to the new row's first field,
// or back to the table's Add button), each parameter's location-specific field (body path, header
// name) and the chosen auth type's fields shown, and a header's value offered the secret ids when
// it names a secret. It acts only on the page that has the form.
//
// The docked Test panel keeps its last arguments per tool in this browser only (localStorage), so
// a reload or the next visit starts from what was last run.

const byId = (id) => document.getElementById(id);

function renumber(rows) {
  rows.querySelectorAll(":scope > [data-row]").forEach((row, index) => {
    for (const number of row.querySelectorAll("[data-row-number]")) number.textContent = String(index + 1);
  });
}

function freshKey(rows) {
  let key;
  do {
    key = Math.random().toString(16).slice(2, 10);
  } while (rows.querySelector(`input[value="${key}"]`));
  return key;
}

function addRow(table) {
  const template = byId(`${table}-template`);
  const rows = byId(`${table}-rows`);
  if (!template || !rows) return;
  rows.insertAdjacentHTML("beforeend", template.innerHTML.replaceAll("__i__", freshKey(rows)));
  renumber(rows);
  rows.lastElementChild?.querySelector("input:not([type=hidden]), select")?.focus();
}

function removeRow(button) {
  const row = button.closest("[data-row]");
  const rows = row?.parentElement;
  if (!row || !rows) return;
  row.remove();
  renumber(rows);
  document.querySelector(`[data-add-row="${rows.dataset.rows}"]`)?.focus();
}

function showLocation(select) {
  const row = select.closest("[data-row]");
  for (const part of row?.querySelectorAll("[data-when-location]") ?? []) {
    part.hidden = part.dataset.whenLocation !== select.value;
  }
}

function showAuth(select) {
  for (const part of document.querySelectorAll("[data-auth]")) part.hidden = part.dataset.auth !== select.value;
}

function valueKind(select) {
  const value = select.closest("[data-row]")?.querySelector('input[name$="_value"]');
  if (!value) return;
  if (select.value === "secret") value.setAttribute("list", "secret-ids");
  else value.removeAttribute("list");
}

function setUp() {
  const form = byId("api-tool-form");
  if (!form) return;
  document.addEventListener("click", (event) => {
    const add = event.target.closest("[data-add-row]");
    if (add) {
      event.preventDefault();
      addRow(add.dataset.addRow);
      return;
    }
    const remove = event.target.closest("[data-remove-row]");
    if (remove) {
      event.preventDefault();
      removeRow(remove);
    }
  });
  document.addEventListener("change", (event) => {
    const target = event.target;
    if (target.matches?.("[data-location]")) showLocation(target);
    else if (target.matches?.("[data-auth-type]")) showAuth(target);
    else if (target.matches?.("[data-value-kind]")) valueKind(target);
  });
  // A refused save: the summary of what to change takes the focus.
  byId("form-problem")?.focus();
}

const TEST_KEY = (tool) => `toolsmith.api-tool-test.${tool}`;

function setUpTestPanel() {
  const form = byId("test-form");
  if (!form) return;
  const field = () => form.querySelector("[data-test-arguments]");
  const first = field();
  try {
    const kept = first && localStorage.getItem(TEST_KEY(first.dataset.testArguments));
    if (kept !== null && kept !== undefined && first.getAttribute("aria-invalid") !== "true") first.value = kept;
  } catch {
    // storage refused: the panel starts from the tool's example arguments
  }
  form.addEventListener("submit", () => {
    const arguments_ = field();
    if (!arguments_) return;
    try {
      localStorage.setItem(TEST_KEY(arguments_.dataset.testArguments), arguments_.value);
    } catch {
      // storage full or refused: keeping the last inputs is a convenience
    }
  });
}

setUp();
setUpTestPanel();
