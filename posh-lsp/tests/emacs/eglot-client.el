;;; eglot-client.el --- Emacs as posh-lsp's client, in batch mode -*- lexical-binding: t; -*-

;; Loads editors/emacs/posh.el, opens $POSH_SCRIPT in sh-mode, lets eglot start posh-lsp
;; ($POSH_LSP) and connect, then prints what the server sent through eglot's connection:
;;   HINT line:character label        for each inlay hint of the whole script
;;   HOVER text                        eglot's rendering of the hover at $POSH_HOVER_AT (a string)
;;   DIAG line: code message           flymake's diagnostics, as eglot fed them
;; Exits 1 on any error.

(require 'eglot)
(require 'flymake)

(defun posh-test--fail (fmt &rest args)
  (princ (concat "FAIL " (apply #'format fmt args) "\n"))
  (kill-emacs 1))

(condition-case err
    (progn
      (setq posh-lsp-program (getenv "POSH_LSP"))
      (load (getenv "POSH_EL") nil t)
      (setq eglot-sync-connect 30
            eglot-connect-timeout 30)
      (find-file (getenv "POSH_SCRIPT"))
      (unless (derived-mode-p 'sh-mode) (sh-mode))
      (apply #'eglot (eglot--guess-contact))
      (let ((server (eglot-current-server)))
        (unless server (posh-test--fail "eglot did not connect"))
        (princ (format "LANGUAGE %s\n" (eglot--language-id server)))
        ;; Inlay hints over the whole buffer.
        (let ((hints (jsonrpc-request
                      server :textDocument/inlayHint
                      `(:textDocument ,(eglot--TextDocumentIdentifier)
                        :range (:start (:line 0 :character 0)
                                :end ,(eglot--pos-to-lsp-position (point-max)))))))
          (seq-doseq (hint hints)
            (let* ((position (plist-get hint :position))
                   (label (plist-get hint :label))
                   (text (if (stringp label)
                             label
                           (mapconcat (lambda (part) (plist-get part :value)) label ""))))
              (princ (format "HINT %d:%d %s\n"
                             (plist-get position :line) (plist-get position :character) text)))))
        ;; Hover, rendered by eglot as it would show it.
        (goto-char (point-min))
        (search-forward (getenv "POSH_HOVER_AT"))
        (goto-char (match-beginning 0))
        (let* ((hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams)))
               (text (eglot--hover-info (plist-get hover :contents) (plist-get hover :range))))
          (dolist (line (split-string text "\n"))
            (princ (format "HOVER %s\n" line))))
        ;; Diagnostics arrive after the server's debounce; flymake holds them.
        (let ((deadline (+ (float-time) 10)))
          (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
            (accept-process-output nil 0.1)
            (when (and (boundp 'flymake-mode) flymake-mode) (flymake-start))))
        (dolist (diag (sort (flymake-diagnostics)
                            (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b)))))
          (princ (format "DIAG %d: %s\n"
                         (line-number-at-pos (flymake-diagnostic-beg diag))
                         (flymake-diagnostic-text diag))))
        ;; A clean shutdown, as eglot starts it: `shutdown' and `exit' with null params. (Not
        ;; `eglot-shutdown' itself: its jsonrpc deletes the process without waiting for it.)
        (let ((process (jsonrpc--process server))
              (deadline (+ (float-time) 10)))
          (princ (format "SHUTDOWN answered %S\n" (jsonrpc-request server :shutdown nil)))
          (jsonrpc-notify server :exit nil)
          (while (and (process-live-p process) (< (float-time) deadline))
            (accept-process-output nil 0.1))
          (princ (format "SHUTDOWN %s %s\n" (process-status process) (process-exit-status process)))))
      (kill-emacs 0))
  (error (posh-test--fail "%S" err)))
