// The participant page of `harness collect serve` (plain JavaScript, no framework, nothing from a CDN).
//
// Why it is built this way: the server decides everything (which item, which step, whether an answer counts); this
// script only shows the state `api/state` gives and posts answers. So a reload, a second tab or a lost connection
// never loses the participant's place: on load the page asks where the participant is and continues there. Text
// reaches the page only through `textContent` (never `innerHTML`), so nothing typed by anyone becomes markup.
"use strict";

(function () {
  const PERCENTS = [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 99];
  const SECTIONS = ["consent", "instructions", "item", "complete"];
  const $ = (id) => document.getElementById(id);

  let info = null; // the last api/state answer: csrf, kind, texts, response_seconds, allow_skip
  let current = null; // the state shown now
  let shownAt = 0; // when the current step was shown (performance.now())
  let countdown = null; // the response timer's interval
  let busy = false; // an answer is on its way
  let instructionsSeen = false;

  // ------------------------------------------------------------------------------------------------ helpers
  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A token as the participant should see it: spaces as a middle dot, line breaks as an arrow.
  function visible(token) {
    return token.replace(/ /g, "\u00b7").replace(/\n/g, "\u21b5").replace(/\t/g, "\u2192");
  }

  function paragraphs(node, text) {
    clear(node);
    for (const part of text.split(/\n\s*\n/)) node.appendChild(element("p", "", part.trim()));
  }

  function show(section) {
    $("loading").hidden = true;
    for (const name of SECTIONS) $(name).hidden = name !== section;
    $("bar").hidden = section !== "item";
  }

  function setStatus(text, isError) {
    const node = $("status");
    node.textContent = text || "";
    node.hidden = !text;
    node.classList.toggle("error", Boolean(isError));
  }

  function fatal(text) {
    stopTimer();
    for (const name of SECTIONS) $(name).hidden = true;
    $("bar").hidden = true;
    $("loading").hidden = true;
    setStatus(text, true);
  }

  // ------------------------------------------------------------------------------------------------ talking to the server
  async function request(method, path, body) {
    const options = { method: method, credentials: "same-origin", cache: "no-store", headers: {} };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = info ? info.csrf : "";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
    return { status: response.status, data: data };
  }

  // Sends until the server answers with something other than a server error: a lost connection keeps the answer
  // and tries again with a growing pause.
  async function send(path, body) {
    let pause = 1000;
    for (;;) {
      try {
        const result = await request("POST", path, body);
        if (result.status < 500) {
          setStatus("");
          return result;
        }
        setStatus("The server had a problem; trying again\u2026", true);
      } catch (err) {
        setStatus("Connection problem: your answer is kept and will be sent again\u2026", true);
      }
      await sleep(pause);
      pause = Math.min(pause * 2, 15000);
    }
  }

  async function loadState() {
    let pause = 1000;
    for (;;) {
      try {
        const result = await request("GET", "api/state");
        if (result.status === 401) {
          fatal("Your session was not found. Please open the study link again.");
          return;
        }
        if (result.status === 200 && result.data) {
          setStatus("");
          info = result.data;
          render(info.state, null);
          return;
        }
        setStatus("The server had a problem; trying again\u2026", true);
      } catch (err) {
        setStatus("Connection problem; trying again\u2026", true);
      }
      await sleep(pause);
      pause = Math.min(pause * 2, 15000);
    }
  }

  // A stale page's CSRF token (the session changed): reloading the state gets the current one. Any other 403 (a
  // refused Origin, e.g. a proxy that does not pass X-Forwarded-Proto) is shown, never retried in silence.
  function isCsrfRefusal(result) {
    return Boolean(result.data && result.data.error && result.data.error.indexOf("CSRF") !== -1);
  }

  // What to do with the answer to a POST: go on, reload the state, or let the participant correct the answer.
  async function handle(result) {
    busy = false;
    if (result.status === 200 && result.data) {
      render(result.data.state, result.data.feedback || null);
    } else if (result.status === 409 || (result.status === 403 && isCsrfRefusal(result))) {
      await loadState(); // already stored (a replay, another tab) or a stale page: continue where the server is
    } else if (result.status === 401) {
      fatal("Your session was not found. Please open the study link again.");
    } else {
      const why = result.data && result.data.error ? result.data.error : "the answer was not accepted";
      setStatus("Please check your answer: " + why, true);
      enableInput(true);
      $("consent-button").disabled = !$("consent-check").checked;
    }
  }

  // ------------------------------------------------------------------------------------------------ phases
  function render(state, feedback) {
    current = state;
    stopTimer();
    if (state.phase === "consent") {
      paragraphs($("consent-text"), info.texts.consent);
      $("consent-check").checked = false;
      $("consent-button").disabled = true;
      show("consent");
    } else if (state.phase === "item") {
      const fresh = state.seq === 0 && state.step === 0 && state.done.practice === 0 && state.done.items === 0;
      if (fresh && !instructionsSeen) {
        paragraphs($("instructions-text"), info.texts.instructions);
        show("instructions");
        $("start-button").focus();
      } else {
        renderItem(state, feedback);
      }
    } else {
      renderComplete(state);
    }
  }

  function renderComplete(state) {
    show("complete");
    if (state.try_later) {
      $("complete-title").textContent = "No items free right now";
      $("complete-text").textContent =
        "Every item is being answered by other people at the moment. Places free up when someone stops: please " +
        "open the same study link again in a while to go on.";
    } else if (state.study_full) {
      $("complete-title").textContent = "The study is full";
      $("complete-text").textContent =
        "Thank you for your interest. Every item has enough answers now, so there is nothing more to do.";
    } else {
      $("complete-title").textContent = "Thank you!";
      $("complete-text").textContent = "You have finished the study.";
    }
    $("code-line").hidden = !state.code;
    $("code").textContent = state.code || "";
    $("link-line").hidden = !state.url || state.try_later;
    if (state.url && !state.try_later) {
      $("link").href = state.url;
      $("complete-text").textContent += " You will be taken back to the study platform in a few seconds.";
      setTimeout(() => window.location.assign(state.url), 5000);
    }
  }

  function renderItem(state, feedback) {
    show("item");
    const view = state.view;
    const practice = state.role === "practice";
    $("role").hidden = !practice;
    $("role").textContent = practice ? "Practice" : "";
    $("progress-text").textContent = practice
      ? "Practice " + Math.min(state.done.practice + 1, state.total.practice) + " of " + state.total.practice
      : "Done: " + state.done.items + " of " + state.total.items + " items";
    $("progress").value = state.total.items ? state.done.items / state.total.items : 0;
    renderFeedback(feedback);
    const text = $("text");
    clear(text);
    const isRound = Array.isArray(view.pair);
    $("answer-form").hidden = isRound;
    $("judge").hidden = !isRound;
    $("space-label").hidden = !(info.kind === "next_token_game" && Array.isArray(view.tokens));
    if (isRound) {
      text.appendChild(element("span", "context", view.context));
      text.appendChild(element("span", "blank", " ___"));
      renderPair(view.pair);
    } else if (Array.isArray(view.tokens)) {
      for (const token of view.tokens) text.appendChild(element("span", "tok", visible(token)));
      text.appendChild(element("span", "tok next", "?"));
      $("answer-label").textContent = "Your guess of the next token:";
    } else {
      renderWords(text, view.context, state.step > 0 && info.kind === "passage_cloze");
      $("answer-label").textContent = "Your guess of the next word:";
    }
    const score = state.score;
    $("score").hidden = !score;
    if (score) $("score").textContent = "Score: " + score.correct + " of " + score.total + " correct";
    if (!isRound) {
      $("answer-input").value = "";
      $("space-check").checked = true;
    }
    enableInput(true);
    shownAt = performance.now();
    startTimer();
  }

  // The text so far, word by word; in a passage the newest word (the one just revealed) is highlighted.
  function renderWords(node, context, markNewest) {
    const words = context ? context.split(" ") : [];
    words.forEach((word, i) => {
      if (i > 0) node.appendChild(document.createTextNode(" "));
      node.appendChild(element("span", markNewest && i === words.length - 1 ? "word new" : "word", word));
    });
    node.appendChild(element("span", "blank", words.length ? " ___" : "___"));
  }

  function renderFeedback(feedback) {
    const node = $("feedback");
    clear(node);
    node.className = "feedback";
    if (!feedback || feedback.target === null || feedback.target === undefined) {
      node.hidden = true;
      return;
    }
    node.hidden = false;
    if (info.kind === "next_token_game") {
      node.classList.add(feedback.correct ? "right" : "wrong");
      node.appendChild(element("strong", "", feedback.correct ? "Correct! " : "Not quite. "));
      node.appendChild(document.createTextNode("The token was "));
      node.appendChild(element("span", "tok", visible(feedback.target)));
    } else {
      node.appendChild(document.createTextNode("The word was "));
      node.appendChild(element("strong", "", feedback.target));
    }
  }

  function renderPair(pair) {
    const box = $("pair");
    clear(box);
    ["A", "B"].forEach((label, i) => {
      const option = element("div", "option");
      option.appendChild(element("span", "label", label));
      option.appendChild(element("span", "tok", visible(pair[i])));
      box.appendChild(option);
    });
    const scale = $("scale");
    clear(scale);
    for (const percent of PERCENTS) {
      const button = element("button", "percent", percent + "%");
      button.type = "button";
      button.dataset.percent = String(percent);
      button.addEventListener("click", () => submit(percent, false));
      scale.appendChild(button);
    }
  }

  function enableInput(on) {
    $("answer-input").disabled = !on;
    $("answer-button").disabled = !on;
    for (const button of $("scale").querySelectorAll("button")) button.disabled = !on;
    if (on && !$("answer-form").hidden) $("answer-input").focus();
  }

  // ------------------------------------------------------------------------------------------------ answering
  function typedAnswer() {
    const text = $("answer-input").value.trim();
    const tokenStep = info.kind === "next_token_game" && Array.isArray(current.view.tokens);
    return tokenStep && text && $("space-check").checked ? " " + text : text;
  }

  async function submit(answer, timedOut) {
    if (busy || !current || current.phase !== "item") return;
    if (!timedOut && answer === "" && !info.allow_skip) {
      setStatus("Please type your guess first.", true);
      $("answer-input").focus();
      return;
    }
    busy = true;
    stopTimer();
    enableInput(false);
    setStatus("");
    const elapsed = Math.max(0, Math.min(86400000, Math.round(performance.now() - shownAt)));
    const body = { seq: current.seq, step: current.step, answer: answer, client_ms: elapsed, timed_out: timedOut };
    await handle(await send("api/answer", body));
  }

  function startTimer() {
    const seconds = info.response_seconds;
    const node = $("timer");
    node.hidden = !seconds;
    if (!seconds) return;
    const deadline = performance.now() + seconds * 1000;
    const tick = () => {
      const left = Math.max(0, Math.ceil((deadline - performance.now()) / 1000));
      node.textContent = left + " s";
      node.classList.toggle("urgent", left <= 5);
      if (left <= 0) {
        stopTimer();
        submit(Array.isArray(current.view.pair) ? null : "", true);
      }
    };
    tick();
    countdown = setInterval(tick, 250);
  }

  function stopTimer() {
    if (countdown !== null) clearInterval(countdown);
    countdown = null;
  }

  // ------------------------------------------------------------------------------------------------ wiring
  document.addEventListener("DOMContentLoaded", () => {
    $("consent-check").addEventListener("change", () => {
      $("consent-button").disabled = !$("consent-check").checked;
    });
    $("consent-button").addEventListener("click", async () => {
      if (busy || !$("consent-check").checked) return;
      busy = true;
      $("consent-button").disabled = true;
      const result = await send("api/consent", {});
      instructionsSeen = false;
      await handle(result);
    });
    $("start-button").addEventListener("click", () => {
      instructionsSeen = true;
      render(current, null);
    });
    $("answer-form").addEventListener("submit", (event) => {
      event.preventDefault();
      submit(typedAnswer(), false);
    });
    loadState();
  });
})();
