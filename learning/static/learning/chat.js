// The chat demo: each message goes to POST /api/v1/messages; the reply shows the injected context, and
// "Noted: ..." under the message says what it taught (read again while a worker has not analysed it yet),
// with a link to the preferences modal. One message is in flight at a time: Send is disabled and a
// "Thinking..." bubble stands in for the reply until it arrives. Enter sends, Shift+Enter is a new line.
(function () {
  "use strict";
  const modal = document.getElementById("preferences-modal");
  const panel = PreferencesPanel.mount(modal.querySelector(".prefs-panel"));
  function openPreferences() { panel.reload(); modal.showModal(); }
  document.getElementById("open-preferences").addEventListener("click", openPreferences);
  modal.querySelector("[data-close]").addEventListener("click", () => modal.close());

  const log = document.getElementById("log");
  const form = document.getElementById("composer");
  const input = document.getElementById("message");
  const send = form.querySelector('[data-role="send"]');
  let inFlight = false;

  function noted(node, learned) {
    if (!learned || !learned.length) return;
    const box = document.createElement("div");
    box.className = "learned";
    box.setAttribute("data-role", "learned");
    learned.forEach((item) => {
      const line = document.createElement("span");
      line.className = "noted";
      line.textContent = "Noted: " + item.text;
      box.appendChild(line);
    });
    const link = document.createElement("a");
    link.href = "/preferences/";  // without scripts, the full page; with them, the modal
    link.setAttribute("data-role", "open-learned");
    link.textContent = "Manage what was learned";
    link.addEventListener("click", (event) => { event.preventDefault(); openPreferences(); });
    box.appendChild(link);
    node.appendChild(box);
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

  function thinking() {
    const node = bubble("thinking", "Thinking");
    node.setAttribute("data-role", "thinking");
    node.setAttribute("role", "status");
    const dots = document.createElement("span");
    dots.className = "dots";
    dots.setAttribute("aria-hidden", "true");
    [".", ".", "."].forEach((dot) => { const span = document.createElement("span"); span.textContent = dot; dots.appendChild(span); });
    node.appendChild(dots);
    return node;
  }

  // What went wrong, in words: the API's own message, or what a failed connection means.
  function describe(error) {
    if (error instanceof TypeError) return "Could not reach the server. Check that it is running, then send again.";
    return error.message || "Something went wrong. Send again.";
  }

  function setBusy(busy) {
    inFlight = busy;
    send.disabled = busy;
    form.setAttribute("aria-busy", busy ? "true" : "false");
  }

  async function submit() {
    const content = input.value.trim();
    if (!content || inFlight) return;
    setBusy(true);
    input.value = "";
    const sent = bubble("user", content);
    const waiting = thinking();
    try {
      const body = await PreferencesPanel.api("/api/v1/", "messages", {
        method: "POST", body: JSON.stringify({ session_id: window.SESSION_ID, content: content }),
      });
      waiting.remove();
      noted(sent, body.learned);
      bubble("assistant", "Context injected into this call:", body.context.text);
      if (body.analysis === "pending") notedLater(sent, body.message_id, 10).catch(() => {});
    } catch (error) {
      waiting.remove();
      if (!input.value) input.value = content;  // what was typed is not lost: fix it or send it again
      const node = bubble("error", "Not sent: " + describe(error));
      node.setAttribute("data-role", "chat-error");
      node.setAttribute("role", "alert");
    } finally {
      setBusy(false);
      input.focus();
    }
  }

  form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
  input.addEventListener("keydown", (event) => {
    // Enter sends; Shift+Enter is a new line; Enter that confirms an input method's composition is not a send.
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    submit();
  });
})();
