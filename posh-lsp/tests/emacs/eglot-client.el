;;; eglot-client.el --- Emacs as posh-lsp's client, in batch mode -*- lexical-binding: t; -*-

;; Loads editors/emacs/posh.el ($POSH_EL), calls `posh-eglot-setup' (the workspace has a
;; posh.toml, so posh-lsp takes its scripts), opens $POSH_SCRIPT in sh-mode, lets eglot start
;; posh-lsp ($POSH_LSP) and connect, then prints what the server sent through eglot's connection
;; and what posh.el made of it:
;;   HINT line:character label         each inlay hint of the whole script, as the server sent it
;;   SHOWN line:character text         each hint overlay of `posh-hints-mode' (padding trimmed)
;;   LENS line: title                  each code lens, as the server sent it
;;   LENSSHOWN line: title | title     each lens overlay of `posh-hints-mode'
;;   HOVERFN function                  the eldoc function that shows hover
;;   HOVER text                        what it showed for the hover at $POSH_HOVER_AT
;;   DIAG line: code message           flymake's diagnostics, as eglot fed them
;; then opens $POSH_ANNOTATIONS (posh-annotation-mode, from posh.el) with a second server:
;;   ALANGUAGE id, ADIAG line: code message, AHOVER text   (hover on `filters_input')
;; Exits 1 on any error.

(require 'eglot)
(require 'flymake)

(defun posh-test--fail (fmt &rest args)
  (princ (concat "FAIL " (apply #'format fmt args) "\n"))
  (kill-emacs 1))

(defun posh-test--wait (what predicate)
  "Waits until PREDICATE is non-nil (at most 20 s), else fails naming WHAT."
  (let ((deadline (+ (float-time) 20)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall predicate) (posh-test--fail "timed out waiting for %s" what))))

(defun posh-test--diagnostics (prefix)
  "Prints flymake's diagnostics of the current buffer once they arrived."
  (let ((deadline (+ (float-time) 10)))
    (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
      (accept-process-output nil 0.1)))
  (dolist (diag (sort (flymake-diagnostics)
                      (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b)))))
    (princ (format "%s %d: %s\n" prefix
                   (line-number-at-pos (flymake-diagnostic-beg diag))
                   (flymake-diagnostic-text diag)))))

(defun posh-test--shutdown (server prefix)
  "`shutdown' and `exit' as eglot sends them (null params); prints how the server ended."
  (let ((process (jsonrpc--process server))
        (deadline (+ (float-time) 10)))
    (princ (format "%s answered %S\n" prefix (jsonrpc-request server :shutdown nil)))
    (jsonrpc-notify server :exit nil)
    (while (and (process-live-p process) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (princ (format "%s %s %s\n" prefix (process-status process) (process-exit-status process)))))

(defun posh-test--position (point)
  "POINT as LSP line:character (UTF-16), by eglot's conversion."
  (let ((position (eglot--pos-to-lsp-position point)))
    (format "%d:%d" (plist-get position :line) (plist-get position :character))))

(condition-case err
    (progn
      (load (getenv "POSH_EL") nil t)
      (setq posh-lsp-program (getenv "POSH_LSP"))
      (posh-eglot-setup)
      ;; t: wait for the answer (a number waits for the first output of any process only).
      (setq eglot-sync-connect t
            eglot-connect-timeout 30)
      (find-file (getenv "POSH_SCRIPT"))
      (unless (derived-mode-p 'sh-mode) (sh-mode))
      (apply #'eglot (eglot--guess-contact))
      (let ((server (eglot-current-server)))
        (unless server (posh-test--fail "eglot did not connect"))
        (princ (format "LANGUAGE %s\n" (eglot--language-id server)))
        ;; What posh-hints-mode shows (eglot 1.9 shows no hints itself), before any synchronous
        ;; request: Emacs 28's jsonrpc leaves the answers that arrive behind a synchronous
        ;; request's answer, in the same read, unprocessed until the server sends more.
        (unless posh-hints-mode (posh-test--fail "posh-hints-mode is off"))
        (posh-test--wait "hint overlays" (lambda () posh-hints--overlays))
        (posh-test--wait "lens overlays" (lambda () posh-hints--lens-overlays))
        (dolist (ov (sort (copy-sequence posh-hints--overlays)
                          (lambda (a b) (< (overlay-start a) (overlay-start b)))))
          (princ (format "SHOWN %s %s\n" (posh-test--position (overlay-start ov))
                         (string-trim (substring-no-properties (overlay-get ov 'before-string))))))
        (dolist (ov (sort (copy-sequence posh-hints--lens-overlays)
                          (lambda (a b) (< (overlay-start a) (overlay-start b)))))
          (princ (format "LENSSHOWN %d: %s\n" (1- (line-number-at-pos (overlay-start ov)))
                         (string-join (overlay-get ov 'posh-lens) " | "))))
        ;; Inlay hints over the whole buffer, as the server sends them.
        (let ((hints (jsonrpc-request
                      server :textDocument/inlayHint
                      `(:textDocument ,(eglot--TextDocumentIdentifier)
                        :range (:start (:line 0 :character 0)
                                :end ,(eglot--pos-to-lsp-position (point-max)))))))
          (seq-doseq (hint hints)
            (let ((position (plist-get hint :position)))
              (princ (format "HINT %d:%d %s\n"
                             (plist-get position :line) (plist-get position :character)
                             (posh-hints--label hint))))))
        ;; Code lenses, as the server sends them.
        (seq-doseq (lens (jsonrpc-request server :textDocument/codeLens
                                          `(:textDocument ,(eglot--TextDocumentIdentifier))))
          (princ (format "LENS %d: %s\n"
                         (plist-get (plist-get (plist-get lens :range) :start) :line)
                         (plist-get (plist-get lens :command) :title))))
        ;; Hover, through the eldoc function that shows it in this buffer.
        (goto-char (point-min))
        (search-forward (getenv "POSH_HOVER_AT"))
        (goto-char (match-beginning 0))
        (let ((fn (cl-find-if (lambda (f) (memq f '(posh-hover-eldoc-function eglot-hover-eldoc-function)))
                              eldoc-documentation-functions))
              (shown nil))
          (unless fn (posh-test--fail "no hover in %S" eldoc-documentation-functions))
          (princ (format "HOVERFN %s\n" fn))
          (funcall fn (lambda (text &rest _) (setq shown (or text ""))))
          (posh-test--wait "hover" (lambda () shown))
          (dolist (line (split-string shown "\n"))
            (princ (format "HOVER %s\n" line))))
        ;; Diagnostics arrive after the server's debounce; flymake holds them.
        (posh-test--diagnostics "DIAG")
        ;; Not `eglot-shutdown' itself: its jsonrpc deletes the process without waiting for it.
        (posh-test--shutdown server "SHUTDOWN"))
      ;; An annotation file, in the mode posh.el defines.
      (find-file (getenv "POSH_ANNOTATIONS"))
      (unless (eq major-mode 'posh-annotation-mode)
        (posh-test--fail "%s opened in %s" (buffer-file-name) major-mode))
      (apply #'eglot (eglot--guess-contact))
      (let ((server (eglot-current-server)))
        (princ (format "ALANGUAGE %s\n" (eglot--language-id server)))
        (posh-test--diagnostics "ADIAG")
        (goto-char (point-min))
        (search-forward "filters_input")
        (goto-char (match-beginning 0))
        (let ((hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams))))
          (princ (format "AHOVER %s\n" (car (split-string (plist-get (plist-get hover :contents) :value) "\n")))))
        (posh-test--shutdown server "ASHUTDOWN"))
      (kill-emacs 0))
  (error (posh-test--fail "%S" err)))
