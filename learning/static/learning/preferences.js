// The preferences panel: lists what was learned, collects changes, applies them on "Save Changes".
// Talks to the management API (/api/v1/preferences, /api/v1/workflows, /api/v1/memories, /api/v1/taste-patterns)
// with the session cookie. Learned text is only ever set as textContent. Editing or deleting a memory and
// stopping a taste pattern take effect at once; the other changes wait for "Save Changes".
(function () {
  "use strict";

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

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([key, value]) => {
      if (key === "text") node.textContent = value;
      else if (key.startsWith("data-") || key === "type" || key === "aria-label") node.setAttribute(key, value);
      else node[key] = value;
    });
    (children || []).forEach((child) => node.appendChild(child));
    return node;
  }

  function mount(root) {
    const base = root.dataset.api;
    const lists = {
      preferences: root.querySelector('[data-role="preferences"]'),
      workflows: root.querySelector('[data-role="workflows"]'),
      taste: root.querySelector('[data-role="taste-patterns"]'),
      memories: root.querySelector('[data-role="memories"]'),
    };
    const status = root.querySelector('[data-role="status"]');
    const errorBox = root.querySelector('[data-role="error"]');
    const form = root.querySelector('[data-role="add-form"]');
    let state = { preferences: [], workflows: [], taste: [], memories: [], toggles: {}, removals: {}, additions: [] };
    let editing = {};  // the memory being edited: {id, draft}

    function showError(message) {
      errorBox.textContent = message || "";
      errorBox.hidden = !message;
    }

    function key(kind, id) { return kind + ":" + id; }

    function row(kind, item, label, detail) {
      const k = key(kind, item.id);
      const checked = k in state.toggles ? state.toggles[k] : item.active;
      const box = el("input", { type: "checkbox", checked: checked, "aria-label": "Apply " + label });
      box.addEventListener("change", () => { state.toggles[k] = box.checked; render(); });
      const remove = el("button", { type: "button", className: "link", text: state.removals[k] ? "Undo" : "Remove",
                                     "aria-label": "Remove " + label });
      remove.addEventListener("click", () => {
        if (state.removals[k]) delete state.removals[k]; else state.removals[k] = true;
        render();
      });
      const li = el("li", { "data-id": String(item.id), "data-kind": kind }, [
        box,
        el("span", { className: "grow" }, [el("span", { text: label }), el("br"), el("span", { className: "muted", text: detail })]),
        remove,
      ]);
      if (state.removals[k]) li.classList.add("removed");
      return li;
    }

    function plural(count, word) { return count + " " + word + (count === 1 ? "" : "s"); }

    const REJECTED_REASONS = { stopped_by_user: "stopped by you", overridden: "you overrode it several times in a row" };

    // A taste pattern: stopping it is immediate (not one of the changes "Save Changes" applies).
    function tasteRow(pattern) {
      const target = pattern.plugin + " / " + (pattern.command || "all commands");
      const detail = target + " · confidence " + Math.round(pattern.confidence * 100) + "% · " +
        plural(pattern.observations, "observation") + " · " + plural(pattern.confirmations, "confirmation") + " · " +
        plural(pattern.rejections, "rejection") +
        (pattern.status === "rejected" && REJECTED_REASONS[pattern.rejected_reason]
          ? " · " + REJECTED_REASONS[pattern.rejected_reason] : "");
      const li = el("li", { "data-id": String(pattern.id), "data-kind": "taste", "data-status": pattern.status }, [
        el("span", { className: "tag " + pattern.status, text: pattern.status }),
        el("span", { className: "grow" }, [
          el("span", { text: pattern.instruction }), el("br"), el("span", { className: "muted", text: detail }),
        ]),
      ]);
      if (pattern.status === "rejected") {
        li.classList.add("stopped");
        return li;
      }
      const stop = el("button", { type: "button", className: "link", text: "Stop applying",
                                   "aria-label": "Stop applying " + pattern.instruction });
      stop.addEventListener("click", async () => {
        stop.disabled = true;
        showError("");
        try {
          const stopped = await api(base, "taste-patterns/" + encodeURIComponent(pattern.id) + "/stop", { method: "POST" });
          state.taste = state.taste.map((p) => (p.id === stopped.id ? stopped : p));
          render();
          // Unsaved changes keep their count; "Save Changes" is still needed for those.
          status.textContent = status.textContent ? status.textContent + " · stopped applying it" : "Stopped applying it";
        } catch (error) {
          stop.disabled = false;
          showError(error.message);
        }
      });
      li.appendChild(stop);
      return li;
    }

    // A memory: the owner's private ones can be edited in place or deleted (both immediate); shared
    // copies change only through the promotion that shared them.
    function memoryRow(memory) {
      const li = el("li", { "data-id": String(memory.id), "data-kind": "memory" });
      const text = el("span", { className: "grow" }, [
        el("span", { text: memory.content }), el("br"),
        el("span", { className: "muted", text: memory.kind + (memory.visibility === "private" ? "" : " · shared with your " + memory.visibility) }),
      ]);
      li.appendChild(text);
      if (memory.visibility !== "private") return li;
      if (editing.id === memory.id) {
        // The editor is part of the state, so a list refresh (the modal reloads on opening) keeps it.
        const input = el("input", { type: "text", value: editing.draft, "aria-label": "Memory text", maxLength: 4000 });
        input.addEventListener("input", () => { editing.draft = input.value; });
        const save = el("button", { type: "submit", text: "Save memory" });
        const cancel = el("button", { type: "button", className: "link", text: "Cancel" });
        const editor = el("form", {}, [input, save, cancel]);
        cancel.addEventListener("click", () => { editing = {}; render(); });
        editor.addEventListener("submit", async (event) => {
          event.preventDefault();
          showError("");
          try {
            const saved = await api(base, "memories/" + encodeURIComponent(memory.id),
                                    { method: "PATCH", body: JSON.stringify({ content: editing.draft }) });
            editing = {};
            state.memories = state.memories.map((m) => (m.id === saved.id ? saved : m));
            render();
            status.textContent = "Memory updated";
          } catch (error) {
            showError(error.message);
          }
        });
        li.replaceChildren(editor);
        return li;
      }
      const edit = el("button", { type: "button", className: "link", text: "Edit", "aria-label": "Edit " + memory.content });
      const remove = el("button", { type: "button", className: "link", text: "Delete", "aria-label": "Delete " + memory.content });
      edit.addEventListener("click", () => {
        editing = { id: memory.id, draft: memory.content };
        render();
        const input = li.parentNode && lists.memories.querySelector('input[aria-label="Memory text"]');
        if (input) input.focus();
      });
      remove.addEventListener("click", async () => {
        showError("");
        try {
          await api(base, "memories/" + encodeURIComponent(memory.id), { method: "DELETE" });
          state.memories = state.memories.filter((m) => m.id !== memory.id);
          render();
          status.textContent = "Memory deleted";
        } catch (error) {
          showError(error.message);
        }
      });
      li.appendChild(edit);
      li.appendChild(remove);
      return li;
    }

    function render() {
      lists.preferences.replaceChildren();
      const prefs = state.preferences.concat(state.additions.map((a, i) => Object.assign({ id: "new" + i, active: true, pending: true }, a)));
      if (!prefs.length) lists.preferences.appendChild(el("li", { className: "muted", text: "Nothing learned yet." }));
      prefs.forEach((p) => {
        if (p.pending) {
          lists.preferences.appendChild(el("li", { "data-kind": "new" }, [
            el("span", { className: "tag", text: "new" }),
            el("span", { className: "grow", text: p.description + (p.category ? " (" + p.category + ")" : "") }),
          ]));
          return;
        }
        const detail = p.category + " · confidence " + Math.round(p.confidence * 100) + "%" +
          (p.candidate ? " · tentative, not applied yet" : "") +
          (p.inactive_reason === "contradicted" ? " · replaced by a newer preference" : "") +
          (p.times_reinforced > 1 ? " · seen " + p.times_reinforced + "x" : "") +
          (p.inactive_reason === "decayed" ? " · still accurate?" : "");
        lists.preferences.appendChild(row("preference", p, p.description, detail));
      });
      lists.workflows.replaceChildren();
      if (!state.workflows.length) lists.workflows.appendChild(el("li", { className: "muted", text: "No workflows yet." }));
      state.workflows.forEach((w) => {
        lists.workflows.appendChild(row("workflow", w, w.workflow_name, "used " + w.times_detected + "x · " + w.trigger_pattern));
      });
      if (lists.memories) {
        lists.memories.replaceChildren();
        if (!state.memories.length) lists.memories.appendChild(el("li", { className: "muted", text: "Nothing remembered yet." }));
        state.memories.forEach((m) => lists.memories.appendChild(memoryRow(m)));
      }
      if (lists.taste) {
        lists.taste.replaceChildren();
        if (!state.taste.length) lists.taste.appendChild(el("li", { className: "muted", text: "Nothing learned from your edits yet." }));
        state.taste.forEach((p) => lists.taste.appendChild(tasteRow(p)));
      }
      const pending = Object.keys(state.toggles).length + Object.keys(state.removals).length + state.additions.length;
      status.textContent = pending ? pending + " unsaved change" + (pending > 1 ? "s" : "") : "";
    }

    function load() {
      const taste = lists.taste ? api(base, "taste-patterns") : Promise.resolve({ taste_patterns: [] });
      return Promise.all([api(base, "preferences"), api(base, "workflows"), taste, api(base, "memories")]).then(([p, w, t, m]) => {
        state = { preferences: p.preferences, workflows: w.workflows, taste: t.taste_patterns, memories: m.memories,
                  toggles: {}, removals: {}, additions: [] };
        render();
      }).catch((error) => showError(error.message));
    }

    root.querySelector('[data-role="show-add"]').addEventListener("click", () => { form.hidden = !form.hidden; });
    root.querySelector('[data-role="add"]').addEventListener("click", () => {
      const data = Object.fromEntries(new FormData(form).entries());
      data.description = data.description.trim();
      if (!data.description) { showError("Write the preference in your own words."); return; }
      if (!data.category) delete data.category;  // the server reads the category from the text
      state.additions.push(data);
      form.reset();
      form.hidden = true;
      showError("");
      render();
    });

    root.querySelector('[data-role="save"]').addEventListener("click", async () => {
      showError("");
      status.textContent = "Saving…";
      try {
        for (const [k, active] of Object.entries(state.toggles)) {
          const [kind, id] = k.split(":");
          if (state.removals[k]) continue;
          await api(base, (kind === "preference" ? "preferences/" : "workflows/") + id + "/toggle",
                    { method: "PATCH", body: JSON.stringify({ active: active }) });
        }
        for (const k of Object.keys(state.removals)) {
          const [kind, id] = k.split(":");
          await api(base, (kind === "preference" ? "preferences/" : "workflows/") + id, { method: "DELETE" });
        }
        for (const addition of state.additions) {
          await api(base, "preferences", { method: "POST", body: JSON.stringify(addition) });
        }
        await load();
        status.textContent = "Saved";
      } catch (error) {
        showError(error.message);
        status.textContent = "";
      }
    });

    root.reload = load;
    load();
    return root;
  }

  window.PreferencesPanel = { mount: mount, api: api };
})();
