;;; eglot-client.el --- Emacs as posh-lsp's client, in batch mode -*- lexical-binding: t; -*-

;; Loads editors/emacs/posh.el, opens $POSH_SCRIPT in sh-mode, lets eglot start posh-lsp
;; ($POSH_LSP) and connect, then prints what the server sent through eglot's connection:
;;   HINT line:character label        for each inlay hint of the whole script
;;   HOVER text                        eglot's rendering of the hover at $POSH_HOVER_AT (a string)
;;   DIAG line: code message           flymake's diagnostics, as eglot fed them
;; then opens $POSH_ANNOTATIONS (posh-annotation-mode, from posh.el) with a second server:
;;   ALANGUAGE id, ADIAG line: code message, AHOVER text   (hover on `filters_input')
;; Exits 1 on any error.

(require 'eglot)
(require 'flymake)

(defun posh-test--fail (fmt &rest args)
  (princ (concat "FAIL " (apply #'format fmt args) "\n"))
  (kill-emacs 1))

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
