// The preferences panel: what was learned about the user, where every change applies at once.
//
// Talks to the management API (/api/v1/preferences, workflows, memories, taste-patterns) with the session
// cookie. Switching an item on or off, adding, deleting, editing a memory, stopping or resuming a taste
// pattern each go to the API straight away and show a toast with Undo ("Preference deleted · Undo"), which
// calls the item's /undo endpoint: the server puts back the state it kept. An error is shown next to the
// item (role=alert) and the item keeps its previous state. Only typing is ever unsaved (a memory being
// edited, a preference being written): closing the dialog the panel sits in (Escape, the × marked
// data-close) or leaving the page asks before discarding it. Learned text is only ever set as textContent.
(function () {
  "use strict";

  const TOAST_MS = 8000; // long enough to read and reach by keyboard; paused while hovered or focused

  function api(base, path, options) {
    const init = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    init.headers["X-CSRFToken"] = window.CSRF_TOKEN;
    if (init.body) init.headers["Content-Type"] = "application/json";
    return fetch(base + path, init).then(async (response) => {
      if (response.status === 204) return null;
      const body = await response.json().catch(() => ({}));
      if (!response.ok) {
        const message = body && body.error ? body.error.message : "Request failed (" + response.status + ")";
        throw new Error(message);
      }
      return body;
    });
  }

  const PROPERTIES = new Set(["className", "checked", "disabled", "value", "hidden", "maxLength", "rows"]);

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([key, value]) => {
      if (value === undefined || value === null || value === false) return;
      if (key === "text") node.textContent = value;
      else if (PROPERTIES.has(key)) node[key] = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    });
    (children || []).filter(Boolean).forEach((child) => node.appendChild(child));
    return node;
  }

  // --- how items are described: from their real fields, in words --------------------------------------

  function times(count, once) {
    if (count === 1) return once;
    if (count === 2) return "twice";
    return count + " times";
  }

  function day(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    const options = { day: "numeric", month: "short" };
    if (date.getFullYear() !== new Date().getFullYear()) options.year = "numeric";
    return date.toLocaleDateString(undefined, options);
  }

  function sureness(confidence) {
    const words = confidence >= 0.85 ? "very confident" : confidence >= 0.7 ? "confident"
      : confidence >= 0.5 ? "fairly confident" : "unsure";
    return words + " (" + Math.round(confidence * 100) + "%)";
  }

  function quoted(text) { return "\u201c" + text + "\u201d"; }

  const CATEGORY = { tone: "Tone", length: "Length", format: "Format", expertise: "Expertise", output: "Output",
                     behavior: "Behaviour" };

  function preferenceState(p) {
    if (p.active) return p.candidate ? ["tentative", "Tentative"] : ["applied", "Applied"];
    if (p.inactive_reason === "contradicted") return ["replaced", "Replaced"];
    if (p.inactive_reason === "decayed") return ["faded", "Faded"];
    return ["off", "Off"];
  }

  function preferenceLines(p, byId, replacedBy) {
    const origin = p.source === "manual"
      ? "added by you on " + day(p.created_at) + (p.times_reinforced > 1 ? ", said " + times(p.times_reinforced) : "")
      : "learned from your messages · " + sureness(p.confidence) + " · seen " + times(p.times_reinforced, "once") +
        ", last on " + day(p.last_reinforced_at);
    const lines = [(CATEGORY[p.category] || p.category) + " · " + origin];
    if (p.active && p.candidate) lines.push("Not applied until you say it again with more certainty.");
    if (p.inactive_reason === "contradicted") {
      const newer = byId[p.superseded_by];
      lines.push("Replaced" + (newer ? " by " + quoted(newer.description) : " by a newer preference") +
                 (p.superseded_at ? " on " + day(p.superseded_at) : "") + ". Tick it to use it again instead.");
    }
    if (p.inactive_reason === "decayed") lines.push("Not reinforced lately, so no longer applied. Still accurate? Tick it.");
    if (!p.active && (p.inactive_reason === "user" || !p.inactive_reason)) lines.push("Switched off by you.");
    (replacedBy[p.id] || []).forEach((older) => {
      lines.push("Replaced " + quoted(older.description) + (older.superseded_at ? " on " + day(older.superseded_at) : "") + ".");
    });
    return lines;
  }

  function workflowLines(w) {
    const lines = ["Seen " + times(w.times_detected, "once") + (w.last_used_at ? " · last used " + day(w.last_used_at) : "") +
                   " · when you ask: " + quoted(w.trigger_pattern)];
    if (w.preferred_output) lines.push("Answered as: " + w.preferred_output);
    if (w.visibility !== "private") lines.push("Shared with your " + w.visibility + ".");
    return lines;
  }

  const MEMORY_KIND = { fact: "A fact", preference: "A preference", commitment: "A commitment", lesson: "A lesson",
                        context: "Context" };

  function memoryLines(m) {
    let line = (MEMORY_KIND[m.kind] || m.kind) + " · " + (m.edited_at ? "edited " + day(m.edited_at) : "remembered " + day(m.created_at));
    if (m.visibility !== "private") line += " · shared with your " + m.visibility + " (changes only through review)";
    return [line];
  }

  function tasteScope(t) {
    return t.command ? t.plugin + " " + t.command + " runs" : "every " + t.plugin + " command's runs";
  }

  const TASTE_STATE = { candidate: ["On trial", "trial"], active: ["Applied", "applied"], rejected: ["Stopped", "stopped"] };

  function tasteLines(t, byId) {
    const judged = (t.confirmations ? "confirmed " + times(t.confirmations, "once") : "not confirmed yet") +
      (t.rejections ? " · overridden " + times(t.rejections, "once") : "");
    const lines = [];
    if (t.status === "candidate") lines.push("Applied on trial to " + tasteScope(t) + ", with a notice · " + judged);
    else if (t.status === "active") lines.push("Applied to " + tasteScope(t) + " · " + judged);
    else {
      const rival = t.evidence && byId[t.evidence.superseded_by];
      const why = t.rejected_reason === "stopped_by_user" ? "Stopped by you"
        : t.rejected_reason === "overridden" ? "Stopped: you overrode it " + times(t.consecutive_rejections || 3) + " in a row"
        : t.rejected_reason === "superseded" ? "Replaced by " + (rival ? quoted(rival.instruction) : "the opposite correction")
        : "Stopped";
      lines.push(why + " · was applied to " + tasteScope(t) + " · " + judged);
    }
    if (t.last_applied_at) lines.push("Last applied " + day(t.last_applied_at) + ".");
    if (t.description) lines.push(t.description);
    return lines;
  }

  // --- the panel ---------------------------------------------------------------------------------------

  function mount(root) {
    const base = root.dataset.api;
    const lists = {
      preference: root.querySelector('[data-role="preferences"]'),
      workflow: root.querySelector('[data-role="workflows"]'),
      memory: root.querySelector('[data-role="memories"]'),
      taste: root.querySelector('[data-role="taste-patterns"]'),
    };
    const form = root.querySelector('[data-role="add-form"]');
    const addError = root.querySelector('[data-role="add-error"]');
    const loadError = root.querySelector('[data-role="error"]');
    const toastBox = root.querySelector('[data-role="toast"]');
    const guardBox = root.querySelector('[data-role="discard-guard"]');
    const dialog = root.closest("dialog");

    const RESOURCE = { preference: "preferences", workflow: "workflows", memory: "memories", taste: "taste-patterns" };
    const LIST_KEY = { preference: "preferences", workflow: "workflows", memory: "memories", taste: "taste_patterns" };
    const UNDO_KEY = { preference: "preference", workflow: "workflow", memory: "memory", taste: "taste_pattern" };
    let state = { preference: [], workflow: [], memory: [], taste: [] };
    let editing = {}; // the memory being edited: {id, draft, original}; survives reloads of the lists
    const busy = {}; // "kind:id" -> true while a request about the item runs
    const errors = {}; // "kind:id" -> the API's message, shown next to the item
    const switching = {}; // "kind:id" -> the on/off value being sent, shown while it is on its way
    let focusKey = null; // the control that had focus, found again after a render
    let toast = null; // {timer, undo}

    function key(kind, id) { return kind + ":" + id; }

    root.addEventListener("focusin", (event) => {
      const target = event.target.closest("[data-focus]");
      if (target) focusKey = target.dataset.focus;
    });

    function refocus() {
      if (!focusKey || (document.activeElement && document.activeElement !== document.body && !root.contains(document.activeElement))) return;
      const target = root.querySelector('[data-focus="' + CSS.escape(focusKey) + '"]');
      if (target && !target.disabled && document.activeElement !== target) target.focus();
    }

    // --- the toast: what just changed, and Undo -------------------------------------------------------

    function hideToast() {
      if (toast) clearTimeout(toast.timer);
      toast = null;
      toastBox.replaceChildren();
    }

    function armTimer(ms) {
      clearTimeout(toast.timer);
      toast.timer = setTimeout(hideToast, ms);
    }

    function showToast(message, undo, options) {
      hideToast();
      toast = { undo: undo || null, timer: null };
      const children = [el("span", { "data-role": "toast-text", text: message })];
      if (undo) {
        const button = el("button", { type: "button", className: "link undo", "data-role": "undo", "data-focus": "toast:undo",
                                      "aria-keyshortcuts": "Control+Z", text: "Undo" });
        button.addEventListener("click", runUndo);
        children.push(button);
      }
      const close = el("button", { type: "button", className: "icon-button", "aria-label": "Dismiss", text: "\u00d7" });
      close.addEventListener("click", hideToast);
      children.push(close);
      toastBox.replaceChildren(el("div", { className: "toast" + (options && options.error ? " failed" : ""),
                                           role: options && options.error ? "alert" : null }, children));
      armTimer(TOAST_MS);
      if (options && options.focusUndo && undo) toastBox.querySelector('[data-role="undo"]').focus();
    }

    toastBox.addEventListener("mouseenter", () => { if (toast) clearTimeout(toast.timer); });
    toastBox.addEventListener("mouseleave", () => { if (toast && !toastBox.contains(document.activeElement)) armTimer(TOAST_MS); });
    toastBox.addEventListener("focusin", () => { if (toast) clearTimeout(toast.timer); });
    toastBox.addEventListener("focusout", (event) => {
      if (toast && !toastBox.contains(event.relatedTarget)) armTimer(TOAST_MS);
    });

    async function runUndo() {
      if (!toast || !toast.undo) return;
      const { kind, id, done } = toast.undo;
      toast.undo = null; // one click (or Ctrl+Z), one undo
      const button = toastBox.querySelector('[data-role="undo"]');
      if (button) button.disabled = true;
      clearTimeout(toast.timer);
      try {
        const body = await api(base, RESOURCE[kind] + "/" + encodeURIComponent(id) + "/undo", { method: "POST", body: "{}" });
        delete errors[key(kind, id)];
        await refresh(kind);
        const item = body[UNDO_KEY[kind]];
        focusKey = item ? key(kind, item.id) + ":main" : kind === "preference" ? "add:show" : null;
        refocus();
        showToast(done);
      } catch (error) {
        showToast("Could not undo: " + error.message, null, { error: true });
      }
    }

    root.addEventListener("keydown", (event) => {
      const typing = event.target.matches("input[type=text], textarea, select");
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z" && !typing && toast && toast.undo) {
        event.preventDefault();
        runUndo();
      }
    });

    // --- changes: each one applied at once -----------------------------------------------------------

    async function change(kind, id, request, message, done, options) {
      const k = key(kind, id);
      busy[k] = true;
      delete errors[k];
      render();
      try {
        const result = await request();
        delete busy[k];
        delete switching[k];
        await refresh(kind);
        const undoId = options && options.undoId ? options.undoId(result) : id;
        showToast(typeof message === "function" ? message(result) : message,
                  { kind: kind, id: undoId, done: done }, { focusUndo: options && options.focusUndo });
        return true;
      } catch (error) {
        delete busy[k];
        delete switching[k];
        errors[k] = error.message; // the item keeps its previous state: state was not changed
        render();
        return false;
      }
    }

    function send(kind, id, suffix, method, body) {
      return () => api(base, RESOURCE[kind] + "/" + encodeURIComponent(id) + suffix,
                       { method: method, body: body === undefined ? undefined : JSON.stringify(body) });
    }

    function toggle(kind, item, on, label) {
      const noun = kind === "preference" ? "Preference" : "Workflow";
      switching[key(kind, item.id)] = on;
      change(kind, item.id, send(kind, item.id, "/toggle", "PATCH", { active: on }),
             noun + " " + quoted(label) + (on ? " switched on" : " switched off"),
             noun + (on ? " switched off again" : " switched on again"));
    }

    function remove(kind, item, label) {
      const noun = { preference: "Preference", workflow: "Workflow", memory: "Memory" }[kind];
      change(kind, item.id, send(kind, item.id, "", "DELETE"), noun + " deleted: " + quoted(label), noun + " restored",
             { focusUndo: true });
    }

    // --- rendering -----------------------------------------------------------------------------------

    function row(kind, item, parts) {
      const k = key(kind, item.id);
      const li = el("li", { "data-kind": kind, "data-id": String(item.id), "data-state": parts.state,
                            "data-status": kind === "taste" ? item.status : null, "aria-busy": busy[k] ? "true" : null,
                            className: parts.className });
      if (parts.control) li.appendChild(parts.control);
      const body = el("div", { className: "grow" }, [
        el("div", { className: "line" }, [el("span", { className: "text", text: parts.text }),
          parts.tag ? el("span", { className: "tag " + parts.state, "data-role": "state", text: parts.tag }) : null]),
        ...parts.lines.map((line) => el("div", { className: "muted", text: line })),
      ]);
      if (parts.editor) body.replaceChildren(parts.editor);
      if (errors[k]) body.appendChild(el("p", { className: "error", role: "alert", "data-role": "item-error", text: errors[k] }));
      li.appendChild(body);
      (parts.actions || []).forEach((action) => li.appendChild(action));
      return li;
    }

    function button(text, label, focus, onClick, disabled) {
      const node = el("button", { type: "button", className: "link", text: text, "aria-label": label, "data-focus": focus,
                                  disabled: disabled });
      node.addEventListener("click", onClick);
      return node;
    }

    function checkbox(kind, item, label) {
      const k = key(kind, item.id);
      const box = el("input", { type: "checkbox", checked: k in switching ? switching[k] : item.active, "aria-label": "Apply " + label,
                                "data-focus": k + ":main", disabled: busy[k] });
      box.addEventListener("change", () => toggle(kind, item, box.checked, label));
      return box;
    }

    function renderPreferences() {
      const byId = Object.fromEntries(state.preference.map((p) => [p.id, p]));
      const replacedBy = {};
      state.preference.forEach((p) => {
        if (p.superseded_by && p.inactive_reason === "contradicted") (replacedBy[p.superseded_by] = replacedBy[p.superseded_by] || []).push(p);
      });
      lists.preference.replaceChildren();
      if (!state.preference.length) lists.preference.appendChild(el("li", { className: "muted", text: "Nothing learned yet." }));
      state.preference.forEach((p) => {
        const k = key("preference", p.id);
        const [stateName, tag] = preferenceState(p);
        lists.preference.appendChild(row("preference", p, {
          state: stateName, tag: tag, text: p.description, lines: preferenceLines(p, byId, replacedBy),
          control: checkbox("preference", p, p.description),
          actions: [button("Delete", "Delete " + p.description, k + ":delete", () => remove("preference", p, p.description), busy[k])],
        }));
      });
    }

    function renderWorkflows() {
      lists.workflow.replaceChildren();
      if (!state.workflow.length) lists.workflow.appendChild(el("li", { className: "muted", text: "No workflows yet." }));
      state.workflow.forEach((w) => {
        const k = key("workflow", w.id);
        lists.workflow.appendChild(row("workflow", w, {
          state: w.active ? "applied" : "off", tag: w.active ? "Applied" : "Off", text: w.workflow_name, lines: workflowLines(w),
          control: checkbox("workflow", w, w.workflow_name),
          actions: [button("Delete", "Delete " + w.workflow_name, k + ":delete", () => remove("workflow", w, w.workflow_name), busy[k])],
        }));
      });
    }

    function memoryEditor(m) {
      const k = key("memory", m.id);
      const input = el("textarea", { "aria-label": "Memory text", maxLength: 4000, rows: 2, "data-focus": k + ":input",
                                     disabled: busy[k] });
      input.value = editing.draft;
      input.addEventListener("input", () => { editing.draft = input.value; });
      const save = el("button", { type: "submit", className: "primary", text: "Save memory", disabled: busy[k] });
      const cancel = el("button", { type: "button", className: "link plain", text: "Cancel", disabled: busy[k] });
      cancel.addEventListener("click", () => { editing = {}; focusKey = k + ":main"; render(); });
      const editor = el("form", { className: "editor" }, [input, el("div", { className: "editor-actions" }, [save, cancel])]);
      editor.addEventListener("submit", async (event) => {
        event.preventDefault();
        const draft = editing.draft.trim();
        if (!draft) { errors[k] = "Write the memory, or delete it."; render(); return; }
        if (draft === editing.original) { editing = {}; focusKey = k + ":main"; render(); return; }
        const saved = await change("memory", m.id, send("memory", m.id, "", "PATCH", { content: draft }),
                                   "Memory updated", "Memory edit undone");
        if (saved) { editing = {}; focusKey = k + ":main"; render(); refocus(); }
      });
      return editor;
    }

    function renderMemories() {
      lists.memory.replaceChildren();
      if (!state.memory.length) lists.memory.appendChild(el("li", { className: "muted", text: "Nothing remembered yet." }));
      state.memory.forEach((m) => {
        const k = key("memory", m.id);
        const own = m.visibility === "private";
        const actions = own && editing.id !== m.id ? [
          button("Edit", "Edit " + m.content, k + ":main", () => {
            editing = { id: m.id, draft: m.content, original: m.content };
            focusKey = k + ":input";
            render();
            refocus();
          }, busy[k]),
          button("Delete", "Delete " + m.content, k + ":delete", () => remove("memory", m, m.content), busy[k]),
        ] : [];
        lists.memory.appendChild(row("memory", m, {
          text: m.content, lines: memoryLines(m), actions: actions, state: own ? "private" : "shared",
          editor: own && editing.id === m.id ? memoryEditor(m) : null,
        }));
      });
    }

    function renderTaste() {
      const byId = Object.fromEntries(state.taste.map((t) => [t.id, t]));
      lists.taste.replaceChildren();
      if (!state.taste.length) lists.taste.appendChild(el("li", { className: "muted", text: "Nothing learned from your edits yet." }));
      state.taste.forEach((t) => {
        const k = key("taste", t.id);
        const [tag, stateName] = TASTE_STATE[t.status] || [t.status, t.status];
        const stopped = t.status === "rejected";
        const action = stopped
          ? button("Resume", "Resume " + t.instruction, k + ":main", () => change("taste", t.id, send("taste", t.id, "/resume", "POST"),
              "Applying it again: " + quoted(t.instruction), "Stopped again"), busy[k])
          : button("Stop applying", "Stop applying " + t.instruction, k + ":main", () => change("taste", t.id,
              send("taste", t.id, "/stop", "POST"), "Stopped applying " + quoted(t.instruction), "Applying it again"), busy[k]);
        lists.taste.appendChild(row("taste", t, {
          state: stateName, tag: tag, text: t.instruction, lines: tasteLines(t, byId), actions: [action],
          className: stopped ? "stopped" : "",
        }));
      });
    }

    function render() {
      renderPreferences();
      renderWorkflows();
      if (lists.memory) renderMemories();
      if (lists.taste) renderTaste();
      refocus();
    }

    function fetchList(kind) {
      return api(base, RESOURCE[kind]).then((body) => { state[kind] = body[LIST_KEY[kind]]; });
    }

    function refresh(kind) {
      return fetchList(kind).catch((error) => { loadError.textContent = error.message; loadError.hidden = false; }).then(render);
    }

    let loading = 0; // reads of the lists in flight
    function load() {
      const kinds = Object.keys(lists).filter((kind) => lists[kind]);
      loading += 1;
      root.setAttribute("aria-busy", "true"); // the lists are being read (assistive tech, and tests, wait)
      return Promise.all(kinds.map(fetchList)).then(() => {
        loadError.hidden = true;
        if (editing.id && !state.memory.some((m) => m.id === editing.id)) editing = {}; // gone meanwhile
        render();
      }).catch((error) => { loadError.textContent = error.message; loadError.hidden = false; })
        .finally(() => { loading -= 1; if (!loading) root.removeAttribute("aria-busy"); });
    }

    // --- adding a preference ---------------------------------------------------------------------------

    const showAdd = root.querySelector('[data-role="show-add"]');
    showAdd.setAttribute("data-focus", "add:show");
    showAdd.addEventListener("click", () => {
      form.hidden = !form.hidden;
      showAdd.setAttribute("aria-expanded", String(!form.hidden));
      if (!form.hidden) form.elements.description.focus();
    });

    function showAddError(message) {
      addError.textContent = message || "";
      addError.hidden = !message;
    }

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const data = Object.fromEntries(new FormData(form).entries());
      data.description = data.description.trim();
      if (!data.description) { showAddError("Write the preference in your own words."); return; }
      if (!data.category) delete data.category; // the server reads the category from the text
      showAddError("");
      const submit = form.querySelector('[data-role="add"]');
      submit.disabled = true;
      try {
        const body = await api(base, "preferences", { method: "POST", body: JSON.stringify(data) });
        const known = state.preference.some((p) => p.id === body.id);
        form.reset();
        form.hidden = true;
        showAdd.setAttribute("aria-expanded", "false");
        await refresh("preference");
        focusKey = key("preference", body.id) + ":main";
        refocus();
        showToast(known ? "You had this preference already: reinforced " + quoted(body.description)
                        : "Preference added: " + quoted(body.description),
                  { kind: "preference", id: body.id, done: known ? "Reinforcement undone" : "Preference removed again" });
      } catch (error) {
        showAddError(error.message); // what was typed stays, to correct and send again
      } finally {
        submit.disabled = false;
      }
    });

    // --- the guard: nothing typed is lost without asking -----------------------------------------------

    function unsaved() {
      const pending = [];
      if (editing.id && editing.draft.trim() !== editing.original) pending.push("your edit of a memory");
      if (!form.hidden && form.elements.description.value.trim()) pending.push("the preference you are writing");
      return pending;
    }

    function guardOpen() { return !guardBox.hidden; }

    function unsavedInput() {
      return root.querySelector('[data-focus$=":input"]') || (!form.hidden && form.elements.description) || null;
    }

    function ask(onDiscard) {
      const pending = unsaved();
      const input = unsavedInput();
      if (input) input.scrollIntoView({ block: "center" }); // what would be lost stays in sight
      guardBox.querySelector('[data-role="guard-text"]').textContent =
        "You have not saved " + pending.join(" and ") + ". Discard it?";
      guardBox.hidden = false;
      guardBox.onDiscard = onDiscard;
      guardBox.querySelector('[data-role="guard-keep"]').focus();
    }

    function keepEditing() {
      guardBox.hidden = true;
      const input = unsavedInput();
      if (input) input.focus();
    }

    guardBox.querySelector('[data-role="guard-keep"]').addEventListener("click", keepEditing);
    guardBox.querySelector('[data-role="guard-discard"]').addEventListener("click", () => {
      editing = {};
      form.reset();
      form.hidden = true;
      showAddError("");
      guardBox.hidden = true;
      render();
      if (guardBox.onDiscard) guardBox.onDiscard();
    });

    if (dialog) {
      // Capture, so the guard runs before whatever closes the dialog (the page's own × handler).
      dialog.addEventListener("keydown", (event) => {
        if (event.key !== "Escape") return;
        if (guardOpen()) { event.preventDefault(); event.stopPropagation(); keepEditing(); return; }
        if (unsaved().length) { event.preventDefault(); event.stopPropagation(); ask(() => dialog.close()); }
      }, true);
      dialog.addEventListener("cancel", (event) => {
        if (unsaved().length || guardOpen()) { event.preventDefault(); if (!guardOpen()) ask(() => dialog.close()); }
      });
      dialog.addEventListener("click", (event) => {
        if (!event.target.closest("[data-close]") || !unsaved().length) return;
        event.preventDefault();
        event.stopImmediatePropagation();
        ask(() => dialog.close());
      }, true);
      dialog.addEventListener("close", () => {
        guardBox.hidden = true;
        if (editing.id && !unsaved().length) { editing = {}; render(); } // an editor left unchanged just closes
      });
    }
    window.addEventListener("beforeunload", (event) => {
      if (unsaved().length) { event.preventDefault(); event.returnValue = ""; }
    });

    root.reload = load;
    root.hasUnsavedChanges = () => unsaved().length > 0;
    load();
    return root;
  }

  window.PreferencesPanel = { mount: mount, api: api };
})();
