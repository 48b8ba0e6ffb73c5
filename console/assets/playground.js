// The Playground's behaviours (console/templates/playground/page.html), and focus after an htmx
// swap for any page that marks an element with data-autofocus (the tokens and record forms).
//
// Recent inputs: the last RECENT arguments run per tool are kept in this browser only
// (localStorage), never sent anywhere; each is a button that fills the form again.

const RECENT = 5;
const KEY = (tool) => `toolsmith.playground.recent.${tool}`;

function readRecent(tool) {
  try {
    const list = JSON.parse(localStorage.getItem(KEY(tool)) || "[]");
    return Array.isArray(list) ? list.filter((item) => item && typeof item === "object" && !Array.isArray(item)) : [];
  } catch {
    return [];
  }
}

function remember(tool, args) {
  const text = JSON.stringify(args);
  const list = [args, ...readRecent(tool).filter((item) => JSON.stringify(item) !== text)].slice(0, RECENT);
  try {
    localStorage.setItem(KEY(tool), JSON.stringify(list));
  } catch {
    // storage full or refused: the recent list is a convenience
  }
}

function renderRecent(root) {
  const tool = root.dataset.tool;
  const list = document.getElementById("recent-inputs");
  const empty = document.getElementById("recent-empty");
  if (!list) return;
  const items = readRecent(tool);
  list.replaceChildren(
    ...items.map((args, index) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "recent-input";
      button.dataset.recentIndex = String(index);
      const text = JSON.stringify(args);
      button.textContent = text.length > 80 ? text.slice(0, 79) + "…" : text;
      button.setAttribute("aria-label", `Use recent input ${index + 1}: ${text.slice(0, 200)}`);
      li.append(button);
      return li;
    }),
  );
  if (empty) empty.hidden = items.length > 0;
}

function showMode(mode) {
  document.querySelectorAll("[data-mode-panel]").forEach((panel) => {
    panel.hidden = panel.dataset.modePanel !== mode;
  });
}

// The form's current values as the arguments (for switching to raw JSON).
function argumentsFromForm() {
  const args = {};
  document.querySelectorAll("[data-arg]").forEach((input) => {
    const name = input.dataset.arg;
    const kind = input.dataset.kind;
    if (kind === "boolean") {
      args[name] = input.checked;
      return;
    }
    const text = input.value;
    if (text.trim() === "") return;
    if (kind === "integer" || kind === "number") {
      const number = Number(text);
      args[name] = Number.isNaN(number) ? text : number;
    } else if (kind === "json") {
      try {
        args[name] = JSON.parse(text);
      } catch {
        args[name] = text;
      }
    } else {
      args[name] = text;
    }
  });
  return args;
}

function fill(args) {
  document.querySelectorAll("[data-arg]").forEach((input) => {
    const name = input.dataset.arg;
    const has = Object.prototype.hasOwnProperty.call(args, name);
    const value = args[name];
    if (input.dataset.kind === "boolean") {
      input.checked = has && value === true;
    } else if (!has || value === null || value === undefined) {
      input.value = "";
    } else if (input.dataset.kind === "json" || typeof value === "object") {
      input.value = JSON.stringify(value);
    } else {
      input.value = String(value);
    }
    input.removeAttribute("aria-invalid");
  });
  const raw = document.getElementById("raw");
  if (raw) raw.value = JSON.stringify(args, null, 2);
}

function recordRun(root) {
  const body = document.getElementById("run-result-body");
  if (!body || !body.dataset.arguments || body.dataset.tool !== root.dataset.tool) return;
  try {
    const args = JSON.parse(body.dataset.arguments);
    if (args && typeof args === "object" && !Array.isArray(args)) remember(root.dataset.tool, args);
  } catch {
    return;
  }
  renderRecent(root);
}

function setUp() {
  const root = document.getElementById("playground");
  if (!root) return;
  renderRecent(root);
  recordRun(root);

  document.addEventListener("change", (event) => {
    const radio = event.target.closest("[data-mode]");
    if (!radio || !radio.checked) return;
    if (radio.value === "json") {
      const raw = document.getElementById("raw");
      if (raw) raw.value = JSON.stringify(argumentsFromForm(), null, 2);
    }
    showMode(radio.value);
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-recent-index]");
    if (!button) return;
    const args = readRecent(root.dataset.tool)[Number(button.dataset.recentIndex)];
    if (!args) return;
    fill(args);
    const status = document.getElementById("recent-status");
    if (status) status.textContent = `Filled the form with recent input ${Number(button.dataset.recentIndex) + 1}.`;
  });

  document.addEventListener("htmx:afterSettle", () => recordRun(root));
}

// After a swap, focus what the answer marks (a form's problem summary, a token just issued).
document.addEventListener("htmx:afterSettle", () => {
  const focus = document.querySelector("[data-autofocus]");
  if (focus && document.activeElement !== focus) focus.focus();
});

setUp();
