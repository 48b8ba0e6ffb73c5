// The Ctrl/⌘+K palette (console/templates/palette/dialog.html): Ctrl+K or ⌘+K, or the shell's Find
// button ([data-palette-open]), opens a modal dialog with a combobox (WAI-ARIA's combobox pattern:
// the input keeps focus, aria-activedescendant names the active option of its listbox). Typing asks
// GET /console/palette?q= (the organization's objects, pages and actions, closest first); the arrow
// keys move, Enter or a click opens the option's page or runs its action, Escape closes the dialog
// and the browser returns focus to where it was.
const dialog = () => document.getElementById("palette");
const input = () => document.getElementById("palette-input");
const list = () => document.getElementById("palette-list");
const status = () => document.getElementById("palette-status");

let results = [];
let active = -1;
let pending = null;
let timer = 0;
let answered = null; // the query the listbox shows the answer to
let chooseWhenAnswered = false; // Enter was pressed before the answer to what was typed came

function open() {
  const box = dialog();
  if (!box || box.open) return;
  answered = null;
  chooseWhenAnswered = false;
  box.showModal();
  input().value = "";
  ask("");
  input().focus();
}

function close() {
  const box = dialog();
  if (box?.open) box.close();
}

function ask(query) {
  pending?.abort();
  pending = new AbortController();
  const url = `/console/palette?q=${encodeURIComponent(query)}`;
  list().setAttribute("aria-busy", "true");
  fetch(url, { headers: { Accept: "application/json" }, signal: pending.signal, credentials: "same-origin" })
    .then((answer) => (answer.ok ? answer.json() : Promise.reject(new Error(String(answer.status)))))
    .then((body) => show(body.results ?? [], query))
    .catch((error) => {
      if (error.name === "AbortError") return;
      show([], query);
      status().textContent = "The search did not answer; try again.";
    })
    .finally(() => list().removeAttribute("aria-busy"));
}

function show(found, query) {
  results = found;
  answered = query;
  const box = list();
  box.replaceChildren(...found.map((hit, index) => {
    const option = document.createElement("li");
    option.id = `palette-option-${index}`;
    option.setAttribute("role", "option");
    option.setAttribute("aria-selected", "false");
    option.className = "palette-option";
    option.dataset.index = String(index);
    const label = document.createElement("span");
    label.className = "palette-label";
    label.textContent = hit.label;
    const kind = document.createElement("span");
    kind.className = "palette-kind";
    kind.textContent = hit.kind;
    option.append(label, kind);
    return option;
  }));
  input().setAttribute("aria-expanded", String(found.length > 0));
  status().textContent = found.length
    ? `${found.length} result${found.length === 1 ? "" : "s"}`
    : query ? `Nothing is named like “${query}”.` : "";
  activate(found.length ? 0 : -1);
  if (chooseWhenAnswered) {
    chooseWhenAnswered = false;
    choose(active);
  }
}

function activate(index) {
  const options = list().querySelectorAll("[role=option]");
  active = index;
  options.forEach((option, i) => option.setAttribute("aria-selected", String(i === index)));
  if (index >= 0 && options[index]) {
    input().setAttribute("aria-activedescendant", options[index].id);
    options[index].scrollIntoView({ block: "nearest" });
  } else {
    input().removeAttribute("aria-activedescendant");
  }
}

function choose(index) {
  const hit = results[index];
  if (!hit) return;
  if (hit.action === "theme") {
    toggleTheme();
    close();
    return;
  }
  close();
  window.location.assign(hit.url);
}

// The shell's theme switch (theme.js) does the work: the palette sets it to the other theme of the
// one in force and lets its change handler remember and apply it.
function toggleTheme() {
  const root = document.documentElement;
  const dark = root.dataset.theme ? root.dataset.theme === "dark" : window.matchMedia("(prefers-color-scheme: dark)").matches;
  const next = dark ? "light" : "dark";
  const select = document.querySelector("[data-theme-switch]");
  if (select) {
    select.value = next;
    select.dispatchEvent(new Event("change", { bubbles: true }));
  } else {
    root.dataset.theme = next;
  }
}

document.addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && event.key.toLowerCase() === "k") {
    if (!dialog()) return;
    event.preventDefault();
    if (dialog().open) close();
    else open();
    return;
  }
  if (event.target !== input()) return;
  const count = results.length;
  if (event.key === "ArrowDown" && count) {
    event.preventDefault();
    activate((active + 1) % count);
  } else if (event.key === "ArrowUp" && count) {
    event.preventDefault();
    activate((active - 1 + count) % count);
  } else if (event.key === "Home" && count && event.ctrlKey) {
    event.preventDefault();
    activate(0);
  } else if (event.key === "End" && count && event.ctrlKey) {
    event.preventDefault();
    activate(count - 1);
  } else if (event.key === "Enter") {
    event.preventDefault();
    const query = input().value.trim();
    if (query !== answered) {
      // a fast typist: open the best match of what was typed, not of what the list showed before
      chooseWhenAnswered = true;
      clearTimeout(timer);
      ask(query);
    } else {
      choose(active);
    }
  }
});

document.addEventListener("input", (event) => {
  if (event.target !== input()) return;
  clearTimeout(timer);
  const query = event.target.value.trim();
  timer = setTimeout(() => ask(query), 80);
});

document.addEventListener("click", (event) => {
  if (event.target.closest?.("[data-palette-open]")) {
    event.preventDefault();
    open();
    return;
  }
  const option = event.target.closest?.("#palette-list [role=option]");
  if (option) {
    choose(Number(option.dataset.index));
    return;
  }
  // a click on the backdrop (the dialog itself, outside its body) closes it
  if (event.target === dialog()) close();
});

// The pointer keeps the input focused (a combobox's focus stays in it) and moves the active option.
document.addEventListener("mousedown", (event) => {
  if (event.target.closest?.("#palette-list [role=option]")) event.preventDefault();
});
document.addEventListener("mousemove", (event) => {
  const option = event.target.closest?.("#palette-list [role=option]");
  if (option && Number(option.dataset.index) !== active) activate(Number(option.dataset.index));
});
