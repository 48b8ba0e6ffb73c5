// File Search tools' pages (console/templates/search_tools/): documents uploaded, one or many,
// chosen with the file input then sent by Upload, or dropped on the drop zone, and sent with XMLHttpRequest so that a
// progress bar follows the bytes (fetch() reports no upload progress); then the documents' list is
// fetched again by htmx, and polls itself while any document is processing. A refused save's
// summary takes the focus. The Test panel shows the chosen capability's fields and keeps its last
// inputs. It acts only on the pages that have these parts.
import htmx from "htmx.org";

const byId = (id) => document.getElementById(id);
const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content ?? "";

function say(text, failed = false) {
  const status = byId("documents-status");
  if (!status) return;
  status.textContent = text;
  status.classList.toggle("error", failed);
}

function counted(n) {
  return `${n} file${n === 1 ? "" : "s"}`;
}

// The problem's detail from an answer that is not a success: problem+json from the API or the body
// limit, or a console page (a refused CSRF token) whose message is read from its text.
function problemOf(xhr) {
  const text = xhr.responseText || "";
  try {
    const problem = JSON.parse(text);
    if (problem && typeof problem.detail === "string") return problem.detail;
  } catch {
    // not JSON: a console page
  }
  const page = new DOMParser().parseFromString(text, "text/html");
  const detail = page.querySelector("main .problem, main p")?.textContent?.trim();
  return detail || `the server answered ${xhr.status}`;
}

function refreshDocuments(zone) {
  if (!byId("documents")) return;
  htmx.ajax("GET", zone.dataset.documentsUrl, { target: "#documents", swap: "outerHTML" });
}

function upload(zone, given) {
  const files = Array.from(given ?? []);
  if (files.length === 0) {
    say("Choose or drop at least one file.", true);
    return false;
  }
  if (zone.dataset.busy === "true") {
    say("An upload is under way: wait for it to finish, then add more.", true);
    return false;
  }
  const area = byId("upload-progress-area");
  const bar = byId("upload-progress");
  const button = byId("upload-button");
  const data = new FormData();
  for (const file of files) data.append("files", file, file.name);
  // The metadata typed for this upload (one field per key of the tool's schema), given to every file.
  for (const field of document.querySelectorAll("#upload-form [data-upload-meta] [name]")) {
    if (field.value.trim()) data.append(field.name, field.value);
  }

  zone.dataset.busy = "true";
  if (button) button.disabled = true;
  if (area) area.hidden = false;
  if (bar) bar.value = 0;
  say(`Uploading ${counted(files.length)}…`);

  const done = () => {
    zone.dataset.busy = "false";
    if (button) button.disabled = false;
  };
  const xhr = new XMLHttpRequest();
  xhr.open("POST", zone.dataset.uploadUrl);
  xhr.setRequestHeader("Accept", "application/json");
  xhr.setRequestHeader("X-CSRF-Token", csrf());
  xhr.upload.addEventListener("progress", (event) => {
    if (event.lengthComputable && bar) bar.value = Math.round((event.loaded / event.total) * 100);
  });
  xhr.upload.addEventListener("load", () => {
    if (bar) bar.value = 100;
  });
  xhr.addEventListener("load", () => {
    done();
    if (xhr.status === 202) {
      if (bar) bar.value = 100;
      let names = [];
      try {
        names = JSON.parse(xhr.responseText).documents.map((d) => d.name);
      } catch {
        // the list below says what arrived
      }
      say(`Uploaded ${counted(files.length)}${names.length ? ` (${names.join(", ")})` : ""}: each is processing, then ready to search.`);
      refreshDocuments(zone);
    } else {
      say(`Not uploaded: ${problemOf(xhr)}`, true);
    }
  });
  xhr.addEventListener("error", () => {
    done();
    say("Not uploaded: the connection to the server was lost. Try again.", true);
  });
  xhr.addEventListener("abort", () => {
    done();
    say("The upload was stopped.", true);
  });
  xhr.send(data);
  return true;
}

function hasFiles(event) {
  return Array.from(event.dataTransfer?.types ?? []).includes("Files");
}

// The Test panel: only the chosen capability's fields are shown (all of them without the script,
// the server reads the ones it needs), and its last inputs are kept in this browser, per tool, so
// that a reload or a return to the page finds the query typed before.
function setUpTest() {
  const form = byId("test-form");
  const choice = byId("test-capability");
  if (!form || !choice) return;
  const key = `toolsmith:search-test:${form.dataset.tool}`;
  const fields = () => Array.from(form.elements).filter((e) => e.name && e.type !== "submit");
  const show = () => {
    for (const group of form.querySelectorAll("[data-for]")) group.hidden = group.dataset.for !== choice.value;
  };
  let kept = null;
  try {
    kept = JSON.parse(localStorage.getItem(key) || "null");
  } catch {
    kept = null; // storage refused or garbled: the panel starts empty
  }
  // What the server filled in (a plain form's answer) wins over what was kept.
  const filled = fields().some((e) => e.type !== "select-one" && e.type !== "checkbox" && e.value);
  if (kept && typeof kept === "object" && !filled) {
    for (const element of fields()) {
      if (!(element.name in kept)) continue;
      if (element.type === "checkbox") element.checked = kept[element.name] === "on";
      else if (element.tagName !== "SELECT" || Array.from(element.options).some((o) => o.value === kept[element.name])) {
        element.value = kept[element.name];
      }
    }
  }
  show();
  choice.addEventListener("change", show);
  // A search result's "Read around it": the panel itself runs Read context on that chunk, its
  // fields showing what ran (the link loads the page with the answer without the script).
  byId("search-results")?.addEventListener("click", (event) => {
    const link = event.target.closest("[data-read-context]");
    const chunk = byId("test-chunk");
    if (!link || !chunk) return;
    event.preventDefault();
    choice.value = "read_context";
    chunk.value = link.dataset.readContext;
    show();
    form.requestSubmit();
  });
  form.addEventListener("submit", () => {
    const values = {};
    for (const element of fields()) values[element.name] = element.type === "checkbox" ? (element.checked ? "on" : "") : element.value;
    try {
      localStorage.setItem(key, JSON.stringify(values));
    } catch {
      // storage refused (private mode, full): the inputs are not kept, the run goes on
    }
  });
}

// The tool's metadata schema: "Add a key" appends an empty row (the page offers two without the script).
function setUpSchema() {
  const rows = byId("metadata-rows");
  const template = byId("metadata-row-template");
  const add = byId("metadata-add");
  if (!rows || !template || !add) return;
  add.hidden = false;
  add.addEventListener("click", () => {
    const n = rows.querySelectorAll(".metadata-row").length;
    const holder = document.createElement("div");
    holder.innerHTML = template.innerHTML.replaceAll("__N__", String(n)).replaceAll("__M__", String(n + 1));
    const row = holder.firstElementChild;
    rows.append(row);
    row.querySelector("input")?.focus();
  });
}

// The Test panel's filter: a condition's ordering operators (more than, at least…) are offered for
// numbers and dates only.
function setUpFilter() {
  for (const key of document.querySelectorAll("select[id^='filter-key-']")) {
    const op = byId(key.id.replace("filter-key-", "filter-op-"));
    if (!op) continue;
    const update = () => {
      const type = key.selectedOptions[0]?.dataset.type ?? "";
      const ordered = type === "number" || type === "date" || type === "";
      for (const option of op.options) {
        if (["gt", "gte", "lt", "lte"].includes(option.value)) option.disabled = !ordered;
      }
      if (op.selectedOptions[0]?.disabled) op.value = "eq";
    };
    key.addEventListener("change", update);
    update();
  }
}

function setUp() {
  if (byId("search-tool-form")) byId("form-problem")?.focus();
  byId("metadata-problem")?.focus();
  setUpSchema();
  setUpTest();
  setUpFilter();
  const zone = byId("drop-zone");
  const input = byId("upload-files");
  const form = byId("upload-form");
  if (!zone || !input || !form) return;

  // Picking files chooses them and Upload sends them: one pick, one press. (Picking used to upload at
  // once and empty the input, so the Upload button pressed after it said, in red, that no file was
  // chosen, under an upload that had worked.) A drop is an upload of its own.
  input.addEventListener("change", () => {
    const n = input.files?.length ?? 0;
    say(n ? `${counted(n)} chosen: press Upload to send ${n === 1 ? "it" : "them"}.` : "");
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (upload(zone, input.files)) input.value = "";
  });

  zone.addEventListener("dragover", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove("dragging");
  });
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    upload(zone, event.dataTransfer?.files);
  });
  // A file dropped beside the zone is not opened by the browser (the page would be left).
  for (const type of ["dragover", "drop"]) {
    document.addEventListener(type, (event) => {
      if (hasFiles(event) && !zone.contains(event.target)) event.preventDefault();
    });
  }
}

setUp();
