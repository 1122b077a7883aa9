// The Project Intelligence page: opens a card (its evidence, from /api/v1/intelligence/cards/<id>),
// expands each excerpt, links to its source, and sends the reader's marks (useful, wrong, stale,
// wrong target) with the session cookie and the CSRF token. Text from the API is only ever set as
// textContent.
(function () {
  "use strict";

  function api(base, path, options) {
    const init = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    init.headers["X-CSRFToken"] = window.CSRF_TOKEN;
    if (init.body) init.headers["Content-Type"] = "application/json";
    return fetch(base + path, init).then(async (response) => {
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
      else if (key.startsWith("data-") || key.startsWith("aria-") || key === "type" || key === "href") node.setAttribute(key, value);
      else node[key] = value;
    });
    (children || []).forEach((child) => node.appendChild(child));
    return node;
  }

  function mount(root) {
    const base = root.dataset.api;
    const status = root.querySelector('[data-role="status"]');
    const targetOptions = document.getElementById("target-options");

    function say(message, isError) {
      status.textContent = message;
      status.className = isError ? "notice error" : "notice";
      status.hidden = !message;
    }

    function evidenceItem(item) {
      const excerpt = el("blockquote", { "data-role": "excerpt", text: item.excerpt, hidden: true });
      const toggle = el("button", { type: "button", "data-action": "expand", text: "Show excerpt" });
      toggle.addEventListener("click", () => {
        excerpt.hidden = !excerpt.hidden;
        toggle.textContent = excerpt.hidden ? "Show excerpt" : "Hide excerpt";
      });
      const meta = [item.source_system, item.observed_at ? item.observed_at.slice(0, 10) : ""].filter(Boolean).join(" · ");
      const children = [
        el("b", { text: item.document_title || item.document_id }),
        el("span", { className: "muted", text: meta ? " (" + meta + ") " : " " }),
        toggle,
      ];
      if (item.source_url) children.push(el("a", { href: item.source_url, "data-role": "source-link", text: " Open source" }));
      children.push(excerpt);
      return el("li", { "data-role": "evidence", "data-evidence-id": String(item.id) }, children);
    }

    function marks(card, article) {
      const send = (signal, extra) =>
        api(base, "cards/" + card.id + "/feedback", {
          method: "POST",
          body: JSON.stringify(Object.assign({ signal: signal }, extra || {})),
        })
          .then((result) => {
            const label = { useful: "useful", wrong: "wrong", stale: "stale", wrong_target: "for another target" }[signal];
            say(
              "Marked " + label + "." + (result.review_id ? " A reviewer will look at it." : ""),
              false,
            );
            article.dataset.marked = signal;
          })
          .catch((error) => say(error.message, true));
      const box = el("div", { className: "marks", "data-role": "marks" });
      [["useful", "Useful"], ["wrong", "Wrong"], ["stale", "Stale"]].forEach(([signal, label]) => {
        const button = el("button", { type: "button", "data-signal": signal, text: label });
        button.addEventListener("click", () => send(signal));
        box.appendChild(button);
      });
      const choose = el("select", { "aria-label": "Right target" });
      choose.appendChild(el("option", { value: "", text: "Belongs to…" }));
      choose.appendChild(targetOptions.content.cloneNode(true));
      const wrongTarget = el("button", { type: "button", "data-signal": "wrong_target", text: "Wrong target" });
      wrongTarget.addEventListener("click", () => {
        if (!choose.value) return say("Choose the target this card belongs to.", true);
        send("wrong_target", { target: choose.value });
      });
      box.appendChild(choose);
      box.appendChild(wrongTarget);
      return box;
    }

    function open(article) {
      const detail = article.querySelector('[data-role="detail"]');
      const button = article.querySelector('[data-action="open"]');
      if (!detail.hidden) {
        detail.hidden = true;
        button.textContent = "Open card";
        return;
      }
      api(base, "cards/" + article.dataset.cardId)
        .then((card) => {
          detail.replaceChildren(
            el("p", { className: "muted", text: "Target " + card.target + " · first evidence " + (card.first_evidence_at || "–").slice(0, 10) }),
            el("h4", { text: "Evidence (" + card.evidence.length + ")" }),
            el("ul", { className: "evidence" }, card.evidence.map(evidenceItem)),
            marks(card, article),
          );
          detail.hidden = false;
          button.textContent = "Close card";
        })
        .catch((error) => say(error.message, true));
    }

    root.querySelectorAll('[data-role="card"]').forEach((article) => {
      article.querySelector('[data-action="open"]').addEventListener("click", () => open(article));
    });
  }

  document.querySelectorAll("#packet").forEach(mount);
})();
