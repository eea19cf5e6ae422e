// The participant page of `harness collect serve` (plain JavaScript, no framework, nothing from a CDN).
//
// Why it is built this way: the server decides everything (which item, which step, whether an answer counts); this
// script only shows the state `api/state` gives and posts answers. So a reload, a second tab or a lost connection
// never loses the participant's place: on load the page asks where the participant is and continues there. Text
// reaches the page only through `textContent` (never `innerHTML`), so nothing typed by anyone becomes markup.
"use strict";

(function () {
  const PERCENTS = [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 99];
  const SECTIONS = ["consent", "instructions", "item", "complete", "unavailable", "excluded"];
  // What one item and one step of it are called, per kind of study (the progress line: "Passage 1 of 2 · word 3 of
  // 40"); a kind whose items have one step shows no step.
  const UNITS = {
    passage_cloze: ["Passage", "passages", "word"],
    sentence_completion: ["Sentence", "sentences", ""],
    next_token_game: ["Text", "texts", "token"],
    which_one_game: ["Round", "rounds", ""],
  };
  const $ = (id) => document.getElementById(id);

  let info = null; // the last api/state answer: csrf, kind, title, texts, response_seconds, allow_skip
  let current = null; // the state shown now
  let shownAt = 0; // when the current step was shown (performance.now())
  let countdown = null; // the response timer's interval
  let busy = false; // an answer is on its way
  let instructionsSeen = false;
  let redirecting = false; // the end page's move back to the platform is scheduled

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
          if (typeof info.title === "string" && info.title) document.title = info.title;
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

  // What to do with the answer to a POST: go on, reload the state, or let the participant correct the answer. The
  // feedback on an answer ("The word was ...") is shown only while the same item goes on (``answeredSeq``): never
  // above an attention check or the next passage, which it does not belong to.
  async function handle(result, answeredSeq) {
    busy = false;
    if (result.status === 200 && result.data) {
      const state = result.data.state;
      const sameItem = state && state.phase === "item" && state.seq === answeredSeq;
      render(state, sameItem ? result.data.feedback || null : null);
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
    } else if (state.phase === "complete") {
      renderComplete(state);
    } else if (state.phase === "unavailable") {
      renderUnavailable(state);
    } else if (state.phase === "excluded") {
      renderExcluded(state);
    } else {
      fatal("The study sent something this page does not know. Please reload the page.");
    }
  }

  // ------------------------------------------------------------------------------------------------ end pages
  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // Finished: every item done, or fewer when the study filled up first (early). The platform's completion code.
  function renderComplete(state) {
    show("complete");
    const n = state.items_done || 0;
    let text = "You have finished the study.";
    if (state.early) {
      text = n
        ? "The study filled up after your " + plural(n, "item") + ", so you have finished."
        : "The study filled up before your first item, so you have finished.";
    }
    $("complete-text").textContent = text;
    $("code-line").hidden = !state.code;
    $("code").textContent = state.code || "";
    showReturn(state.url, "link-line", "link", "complete-redirect");
  }

  // Turned away before any item: every place is held by others now, or the study has all its answers. No code,
  // no link: the participant is told to come back or to return the study.
  function renderUnavailable(state) {
    show("unavailable");
    if (state.reason === "held") {
      const minutes = state.retry_minutes;
      const when = typeof minutes === "number" && minutes > 0 ? "in about " + plural(minutes, "minute") : "later";
      $("unavailable-title").textContent = "No place free right now";
      $("unavailable-text").textContent =
        "All places are taken at the moment. Please do not submit a completion code. Open the same study link " +
        "again " + when + ", or return the study on the platform.";
    } else {
      $("unavailable-title").textContent = "The study is full";
      $("unavailable-text").textContent =
        "This study has all the answers it needs, so there is nothing to do. Please return the study on the " +
        "platform (do not submit a completion code). Thank you for your interest.";
    }
  }

  // Excluded (failed attention checks, or by the organiser): the platform's code for excluded participants when the
  // study has one, never the completion code.
  function renderExcluded(state) {
    show("excluded");
    $("excluded-text").textContent =
      state.by === "organiser"
        ? "The researchers have ended your part in this study, so the study ends here."
        : "Your answers did not pass the study's attention checks, so the study ends here.";
    $("excluded-code-line").hidden = !state.code;
    $("excluded-code").textContent = state.code || "";
    $("excluded-return").hidden = Boolean(state.code);
    showReturn(state.url, "excluded-link-line", "excluded-link", "excluded-redirect");
  }

  // The link back to the platform, followed by itself after five seconds.
  function showReturn(url, lineId, linkId, noteId) {
    $(lineId).hidden = !url;
    $(noteId).hidden = !url;
    if (!url) return;
    $(linkId).href = url;
    if (!redirecting) {
      redirecting = true;
      setTimeout(() => window.location.assign(url), 5000);
    }
  }

  function renderItem(state, feedback) {
    show("item");
    const view = state.view;
    const practice = state.role === "practice";
    $("role").hidden = !practice;
    $("role").textContent = practice ? "Practice" : "";
    renderProgress(state);
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

  // Where the participant is: the item and, within a passage or a text, the step ("Passage 1 of 2 · word 3 of 40");
  // the bar counts steps (of the main items). Practice items are counted on their own, beside the Practice badge; an
  // attention check says only how many items are done (it is not announced as one).
  function renderProgress(state) {
    const units = UNITS[info.kind] || ["Item", "items", ""];
    const total = state.total.items;
    const within = units[2] && state.n_steps > 1;
    const steps = within ? " \u00b7 " + units[2] + " " + (state.step + 1) + " of " + state.n_steps : "";
    let text = state.done.items + " of " + total + " " + units[1] + " done";
    let value = total ? state.done.items / total : 0;
    if (state.role === "practice") {
      const n = state.total.practice;
      text = units[0] + " " + Math.min(state.done.practice + 1, n) + " of " + n + steps; // beside the Practice badge
    } else if (state.role === "main") {
      text = units[0] + " " + Math.min(state.done.items + 1, total) + " of " + total + steps;
      if (total && state.n_steps) value = Math.min(1, (state.done.items + state.step / state.n_steps) / total);
    }
    $("progress-text").textContent = text;
    $("progress").value = value;
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
    await handle(await send("api/answer", body), current.seq);
  }

  function startTimer() {
    const seconds = info.response_seconds;
    const node = $("timer");
    node.hidden = !seconds;
    if (!seconds) return;
    const deadline = performance.now() + seconds * 1000;
    const tick = () => {
      const left = Math.max(0, Math.ceil((deadline - performance.now()) / 1000));
      const label = "Time left: " + left + " s";
      if (node.textContent !== label) {
        node.textContent = label;
        node.setAttribute("aria-label", "Time left to answer: " + plural(left, "second"));
      }
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
      await handle(result, null);
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
