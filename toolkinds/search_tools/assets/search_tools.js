// File Search tools' pages (console/templates/search_tools/): documents uploaded, one or many,
// picked with the file input or dropped on the drop zone, and sent with XMLHttpRequest so that a
// progress bar follows the bytes (fetch() reports no upload progress); then the documents' list is
// fetched again by htmx, and polls itself while any document is processing. A refused save's
// summary takes the focus. It acts only on the pages that have these parts.
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
    return;
  }
  if (zone.dataset.busy === "true") {
    say("An upload is under way: wait for it to finish, then add more.", true);
    return;
  }
  const area = byId("upload-progress-area");
  const bar = byId("upload-progress");
  const button = byId("upload-button");
  const data = new FormData();
  for (const file of files) data.append("files", file, file.name);

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
}

function hasFiles(event) {
  return Array.from(event.dataTransfer?.types ?? []).includes("Files");
}

function setUp() {
  if (byId("search-tool-form")) byId("form-problem")?.focus();
  const zone = byId("drop-zone");
  const input = byId("upload-files");
  const form = byId("upload-form");
  if (!zone || !input || !form) return;

  // With the script, picking files uploads them at once; the button stays for a second upload.
  input.addEventListener("change", () => {
    if (input.files?.length) upload(zone, input.files);
    input.value = "";
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    upload(zone, input.files);
    input.value = "";
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
