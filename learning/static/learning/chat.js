// The chat demo: each message goes to POST /api/v1/messages; the reply shows the injected context.
(function () {
  "use strict";
  const modal = document.getElementById("preferences-modal");
  const panel = PreferencesPanel.mount(modal.querySelector(".prefs-panel"));
  document.getElementById("open-preferences").addEventListener("click", () => { panel.reload(); modal.showModal(); });
  modal.querySelector("[data-close]").addEventListener("click", () => modal.close());

  const log = document.getElementById("log");
  const input = document.getElementById("message");

  function bubble(role, text, context) {
    const node = document.createElement("div");
    node.className = "msg " + role;
    node.textContent = text;
    if (context !== undefined) {
      const pre = document.createElement("pre");
      pre.textContent = context || "(nothing learned yet to inject)";
      node.appendChild(pre);
    }
    log.appendChild(node);
    node.scrollIntoView({ block: "end" });
  }

  document.getElementById("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = input.value.trim();
    if (!content) return;
    input.value = "";
    bubble("user", content);
    try {
      const body = await PreferencesPanel.api("/api/v1/", "messages", {
        method: "POST", body: JSON.stringify({ session_id: window.SESSION_ID, content: content }),
      });
      bubble("assistant", "Context injected into this call:", body.context.text);
    } catch (error) {
      bubble("assistant", "Could not send: " + error.message);
    }
  });
})();
