// The review console's queue, as annotation queues work: j/k (or the arrow keys) move between rows,
// Enter opens one, x selects it, a/r approve or reject it after a confirmation with notes, / goes to
// the search, ? lists the shortcuts. "Select all on this page" and the bulk buttons ask the same
// confirmation. Without this script the page still works: the bulk form posts as it is.
(function () {
  "use strict";
  const rows = Array.from(document.querySelectorAll('[data-role="promotion-row"]'));
  const search = document.querySelector('[data-role="search"]');
  const bulk = document.querySelector('[data-role="bulk-form"]');
  const bulkNotes = document.querySelector('[data-role="bulk-notes"]');
  const selectPage = document.querySelector('[data-role="select-page"]');
  const counter = document.querySelector('[data-role="selected-count"]');
  const confirmDialog = document.querySelector('[data-role="confirm-dialog"]');
  const shortcuts = document.querySelector('[data-role="shortcuts"]');
  const part = (role) => confirmDialog.querySelector('[data-role="' + role + '"]');
  let current = -1;

  const checkbox = (row) => row.querySelector('[data-role="select-row"]');
  const selected = () => rows.filter((row) => checkbox(row) && checkbox(row).checked);

  function refresh() {
    const chosen = selected();
    rows.forEach((row) => row.classList.toggle("selected", chosen.includes(row)));
    if (counter) counter.textContent = chosen.length + " selected";
    if (selectPage) {
      selectPage.checked = chosen.length > 0 && chosen.length === rows.length;
      selectPage.indeterminate = chosen.length > 0 && chosen.length < rows.length;
    }
  }

  function focusRow(index) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach((row, i) => row.setAttribute("tabindex", i === current ? "0" : "-1"));
    rows[current].focus();
    rows[current].scrollIntoView({ block: "nearest" });
  }

  function quoted(row) {
    return "\u201c" + row.dataset.summary + "\u201d";
  }

  // The one way to approve or reject from the list: a dialog naming what is decided, with notes.
  function confirmDecision(action, chosen) {
    const verb = action === "approve" ? "Approve" : "Reject";
    part("confirm-action").value = action;
    part("confirm-ids").replaceChildren(
      ...chosen.map((row) => {
        const input = document.createElement("input");
        input.type = "hidden";
        input.name = "ids";
        input.value = row.dataset.id;
        return input;
      })
    );
    part("confirm-title").textContent =
      chosen.length === 1 ? verb + " this candidate?" : verb + " these " + chosen.length + " candidates?";
    const named = chosen.slice(0, 10).map(quoted);
    if (chosen.length > 10) named.push("and " + (chosen.length - 10) + " more");
    part("confirm-text").replaceChildren(
      ...named.map((text) => {
        const item = document.createElement("li");
        item.textContent = text;
        return item;
      })
    );
    part("confirm-notes").value = bulkNotes ? bulkNotes.value : "";
    const submit = part("confirm-submit");
    submit.textContent = chosen.length === 1 ? verb : verb + " " + chosen.length;
    submit.classList.toggle("primary", action === "approve");
    confirmDialog.showModal();
    part("confirm-notes").focus();
  }

  rows.forEach((row, index) => {
    row.addEventListener("focusin", () => { current = index; });
    const box = checkbox(row);
    if (box) box.addEventListener("change", refresh);
  });
  if (selectPage) {
    selectPage.addEventListener("change", () => {
      rows.forEach((row) => { if (checkbox(row)) checkbox(row).checked = selectPage.checked; });
      refresh();
    });
  }
  if (bulk) {
    bulk.addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = selected();
      if (!chosen.length) {
        counter.textContent = "Select at least one candidate first.";
        return;
      }
      confirmDecision(event.submitter && event.submitter.value === "reject" ? "reject" : "approve", chosen);
    });
  }
  part("confirm-cancel").addEventListener("click", () => confirmDialog.close());
  confirmDialog.addEventListener("close", () => { if (current >= 0) focusRow(current); });
  shortcuts.querySelector('[data-role="shortcuts-close"]').addEventListener("click", () => shortcuts.close());
  document.querySelector('[data-role="show-shortcuts"]').addEventListener("click", () => shortcuts.showModal());

  // Keys typed into a field are text, never shortcuts.
  function typing(target) {
    if (!target || !target.tagName) return false;
    if (target.isContentEditable) return true;
    if (target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
    return target.tagName === "INPUT" && !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target) || document.querySelector("dialog[open]")) return;
    const key = event.key;
    if (key === "?") {
      event.preventDefault();
      shortcuts.showModal();
    } else if (key === "/") {
      event.preventDefault();
      search.focus();
      search.select();
    } else if (!rows.length) {
      return;
    } else if (key === "j" || key === "ArrowDown") {
      event.preventDefault();
      focusRow(current + 1);
    } else if (key === "k" || key === "ArrowUp") {
      event.preventDefault();
      focusRow(current < 0 ? 0 : current - 1);
    } else if (current >= 0) {
      const row = rows[current];
      if (key === "Enter" && event.target === row) {
        event.preventDefault();
        window.location.assign(row.dataset.url);
      } else if (key === "x" && checkbox(row)) {
        event.preventDefault();
        checkbox(row).checked = !checkbox(row).checked;
        refresh();
      } else if ((key === "a" || key === "r") && checkbox(row)) {
        event.preventDefault();
        confirmDecision(key === "a" ? "approve" : "reject", [row]);
      }
    }
  });
  refresh();
})();
