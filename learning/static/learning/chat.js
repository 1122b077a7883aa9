// The chat demo: each message goes to POST /api/v1/messages; the reply shows the injected context, and
// "Noted: ..." under the message says what it taught (read again while a worker has not analysed it yet).
(function () {
  "use strict";
  const modal = document.getElementById("preferences-modal");
  const panel = PreferencesPanel.mount(modal.querySelector(".prefs-panel"));
  document.getElementById("open-preferences").addEventListener("click", () => { panel.reload(); modal.showModal(); });
  modal.querySelector("[data-close]").addEventListener("click", () => modal.close());

  const log = document.getElementById("log");
  const input = document.getElementById("message");

  function noted(node, learned) {
    learned.forEach((item) => {
      const line = document.createElement("div");
      line.className = "noted";
      line.textContent = "Noted: " + item.text;
      node.appendChild(line);
    });
  }

  async function notedLater(node, messageId, tries) {
    for (let i = 0; i < tries; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const message = await PreferencesPanel.api("/api/v1/", "messages/" + encodeURIComponent(messageId));
      if (message.analysis === "done") { noted(node, message.learned); return; }
    }
  }

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
    return node;
  }

  document.getElementById("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = input.value.trim();
    if (!content) return;
    input.value = "";
    const sent = bubble("user", content);
    try {
      const body = await PreferencesPanel.api("/api/v1/", "messages", {
        method: "POST", body: JSON.stringify({ session_id: window.SESSION_ID, content: content }),
      });
      noted(sent, body.learned);
      bubble("assistant", "Context injected into this call:", body.context.text);
      if (body.analysis === "pending") notedLater(sent, body.message_id, 10).catch(() => {});
    } catch (error) {
      bubble("assistant", "Could not send: " + error.message);
    }
  });
})();
