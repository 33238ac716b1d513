;;; posh-test.el --- ERT tests of posh.el, against the real posh-lsp -*- lexical-binding: t; -*-

;; Run from editors/emacs (ci.sh does):
;;   POSH_LSP=../../target/debug/posh-lsp emacs -Q --batch [elpa] -L . -l test/posh-test.el \
;;     -f ert-run-tests-batch-and-exit
;;
;; The eglot tests open a script in a workspace like posh-lsp's own tests build
;; (posh-lsp/tests/common/mod.rs `workspace()'): a posh.toml mounting data/, which holds five
;; sparse logs of 500 MB, and annotations/tools.posh.  They compare what posh.el shows (overlays)
;; with what the server answers to the same request, never with wording of their own.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'posh)

(defconst posh-test--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "This file's directory.")

(defconst posh-test--repo (expand-file-name "../../../" posh-test--dir)
  "The posh repository.")

(defconst posh-test--server
  (expand-file-name (or (getenv "POSH_LSP") "target/debug/posh-lsp") posh-test--repo)
  "The posh-lsp under test: $POSH_LSP, else the repository's debug build.")

(defconst posh-test--timeout 30 "Seconds to wait for the server.")

(defun posh-test--wait (what predicate)
  "Wait until PREDICATE returns non-nil, and return that; fail naming WHAT."
  (let ((deadline (+ (float-time) posh-test--timeout))
        value)
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or value (ert-fail (format "timed out waiting for %s" what)))))

(defun posh-test--workspace ()
  "Make a workspace like posh-lsp's tests; return its directory."
  (let ((dir (file-name-as-directory (make-temp-file "posh-test-" t))))
    (with-temp-file (expand-file-name "posh.toml" dir)
      (insert "[[mount]]\nname = \"logs\"\npath = \"data\"\nproxy = \"10.0.0.1:4433\"\n"))
    (make-directory (expand-file-name "data" dir))
    (dotimes (i 5)
      (let ((log (expand-file-name (format "data/ray%d.log" i) dir)))
        (unless (zerop (call-process "truncate" nil nil nil "-s" "500000000" log))
          (error "Could not make %s" log))))
    (make-directory (expand-file-name "annotations" dir))
    (with-temp-file (expand-file-name "annotations/tools.posh" dir)
      (insert "csvstat[filters_input, output_ratio:0.01]:\n- PARAMS:\n"
              "  - type:input_file, size:list, splittable\n"))
    (make-directory (expand-file-name "home/.config" dir) t)
    (make-directory (expand-file-name "home/.local/state" dir) t)
    dir))

(defconst posh-test--script
  (concat "#!/bin/bash\n# Größe 🎉\ncat data/ray*.log | grep 'é🎉' | sort\n"
          "mytool data/ray0.log | sort\n"
          "echo 🎉; cat data/ray1.log | grep x | sort\n")
  "A script with pipelines posh places, and characters outside the BMP before hints.")

(defmacro posh-test--with-server (file text &rest body)
  "Open FILE (relative to a new workspace) holding TEXT, with eglot and posh-lsp; run BODY.
The server starts with a home of its own (no user configuration, no measured ratios)."
  (declare (indent 2) (debug t))
  `(let* ((dir (posh-test--workspace))
          (home (expand-file-name "home" dir))
          (process-environment
           (append (list (concat "HOME=" home)
                         (concat "XDG_CONFIG_HOME=" home "/.config")
                         (concat "XDG_STATE_HOME=" home "/.local/state")
                         "POSH_CONFIG=")
                   process-environment))
          (posh-lsp-program posh-test--server)
          (eglot-sync-connect t)   ; A number waits for one output only, maybe not the answer.
          (eglot-connect-timeout posh-test--timeout)
          (eglot-autoreconnect nil)
          (file (expand-file-name ,file dir))
          (buffer nil))
     (unless (file-executable-p posh-test--server)
       (ert-fail (format "no posh-lsp at %s (set POSH_LSP)" posh-test--server)))
     (with-temp-file file (insert ,text))
     (unwind-protect
         (progn
           (posh-eglot-setup)
           (setq buffer (find-file-noselect file))
           (switch-to-buffer buffer)
           (with-current-buffer buffer
             (let ((inhibit-message t))
               (apply #'eglot (eglot--guess-contact)))
             (should (eglot-managed-p))
             (should (cl-typep (eglot-current-server) 'posh-eglot-server))
             ,@body))
       (when (buffer-live-p buffer)
         (with-current-buffer buffer
           (let ((server (eglot-current-server)))
             (when server
               (let ((inhibit-message t))
                 (ignore-errors (eglot-shutdown server)))))
           (set-buffer-modified-p nil))
         (kill-buffer buffer))
       (posh-eglot-teardown)
       (delete-directory dir t))))

(defun posh-test--server-hints ()
  "Ask the server for the hints of the whole buffer: ((POINT . LABEL) ...), sorted."
  (posh-hints--flush-changes)
  (let ((hints (jsonrpc-request
                (eglot-current-server) :textDocument/inlayHint
                (list :textDocument (eglot--TextDocumentIdentifier)
                      :range (list :start (eglot--pos-to-lsp-position (point-min))
                                   :end (eglot--pos-to-lsp-position (point-max)))))))
    (sort (mapcar (lambda (hint)
                    (cons (eglot--lsp-position-to-point (plist-get hint :position))
                          (posh-hints--label hint)))
                  (append hints nil))
          (lambda (a b) (< (car a) (car b))))))

(defun posh-test--shown-hints ()
  "The hints shown as overlays: ((POINT . TEXT) ...), sorted.
TEXT is the overlay's text without the padding around the label."
  (sort (mapcar (lambda (ov)
                  (should (eq (overlay-buffer ov) (current-buffer)))
                  (should (= (overlay-start ov) (overlay-end ov)))
                  (cons (overlay-start ov)
                        (string-trim (substring-no-properties (overlay-get ov 'before-string)))))
                posh-hints--overlays)
        (lambda (a b) (< (car a) (car b)))))

(defun posh-test--utf16-point (line character)
  "The point of LSP position LINE:CHARACTER, computed without eglot."
  (save-excursion
    (goto-char (point-min))
    (forward-line line)
    (let* ((text (buffer-substring-no-properties (point) (line-end-position)))
           (bytes (encode-coding-string text 'utf-16le))
           (prefix (decode-coding-string (substring bytes 0 (min (length bytes) (* 2 character)))
                                         'utf-16le)))
      (+ (point) (length prefix)))))

(defun posh-test--hints-shown-p ()
  "Non-nil once posh has shown hints for the document's current version."
  (and posh-hints--overlays
       (eql (car posh-hints--covered) (posh-hints--version))))

;;;; Inlay hints and code lenses, from the real server

(ert-deftest posh-test-hints-are-the-servers ()
  "The overlays stand where the server's hints are, with the server's labels."
  (posh-test--with-server "count.sh" posh-test--script
                          (should posh-hints-mode)
                          (posh-test--wait "hints" #'posh-test--hints-shown-p)
                          (let ((expected (posh-test--server-hints))
                                (shown (posh-test--shown-hints)))
                            (should (>= (length expected) 2))
                            (should (cl-every (lambda (hint) (not (string-empty-p (cdr hint)))) expected))
                            (should (equal shown expected))
                            ;; Each overlay shows its label in `posh-hint-face'.
                            (dolist (ov posh-hints--overlays)
                              (let* ((text (overlay-get ov 'before-string))
                                     (at (string-match (regexp-quote (overlay-get ov 'posh-hint)) text)))
                                (should at)
                                (should (memq 'posh-hint-face (ensure-list (get-text-property at 'face text)))))))
                          ;; Positions are UTF-16 code units: check them against a conversion of our own, on the line
                          ;; with characters outside the BMP.
                          (let ((raw (jsonrpc-request
                                      (eglot-current-server) :textDocument/inlayHint
                                      (list :textDocument (eglot--TextDocumentIdentifier)
                                            :range (list :start '(:line 0 :character 0)
                                                         :end (eglot--pos-to-lsp-position (point-max))))))
                                (checked 0))
      (seq-doseq (hint raw)
        (let* ((position (plist-get hint :position))
               (point (posh-test--utf16-point (plist-get position :line)
                                              (plist-get position :character))))
          ;; A hint after a character outside the BMP: UTF-16 units and characters differ.
          (unless (= (plist-get position :character)
                     (- point (save-excursion (goto-char point) (line-beginning-position))))
            (cl-incf checked))
          (should (cl-find-if (lambda (ov) (= (overlay-start ov) point)) posh-hints--overlays))))
      (should (> checked 0)))))

(ert-deftest posh-test-lenses-are-the-servers ()
  "A lens overlay stands above each line the server gives lenses for, with their titles."
  (posh-test--with-server "count.sh" posh-test--script
                          (posh-test--wait "lenses" (lambda () posh-hints--lens-overlays))
                          (let* ((lenses (jsonrpc-request (eglot-current-server) :textDocument/codeLens
                                                          (list :textDocument (eglot--TextDocumentIdentifier))))
                                 (expected '()))
                            (should (> (length lenses) 0))
                            (seq-doseq (lens lenses)
                              (let* ((point (eglot--lsp-position-to-point (plist-get (plist-get lens :range) :start)))
                                     (line (save-excursion (goto-char point) (line-beginning-position)))
                                     (title (plist-get (plist-get lens :command) :title))
                                     (cell (assq line expected)))
                                (should (not (string-empty-p title)))
                                (if cell
                                    (setcdr cell (append (cdr cell) (list title)))
                                  (push (list line title) expected))))
                            (should (equal (sort (mapcar (lambda (ov) (cons (overlay-start ov) (overlay-get ov 'posh-lens)))
                                                         posh-hints--lens-overlays)
                                                 (lambda (a b) (< (car a) (car b))))
                                           (sort expected (lambda (a b) (< (car a) (car b))))))
                            ;; Shown on a line of their own above, as the titles joined.
                            (dolist (ov posh-hints--lens-overlays)
                              (let ((text (substring-no-properties (overlay-get ov 'before-string))))
                                (should (string-suffix-p "\n" text))
                                (should (equal (string-trim text) (string-join (overlay-get ov 'posh-lens) " | "))))))))

(ert-deftest posh-test-hints-follow-edits-without-flicker ()
  "After an edit the old overlays stay, a stale answer is dropped, the new one replaces them."
  (posh-test--with-server "count.sh" posh-test--script
                          (posh-test--wait "hints" #'posh-test--hints-shown-p)
                          (let* ((old-version (posh-hints--version))
                                 (old-overlays (copy-sequence posh-hints--overlays))
                                 (region (cons (point-min) (point-max))))
                            (goto-char (point-max))
                            (insert "cat data/ray1.log data/ray2.log | grep x | wc -l\n")
                            (should (not (eql (posh-hints--version) old-version)))
                            ;; Nothing is deleted before the new answer, and a request waits for Emacs to be idle.
                            (should (cl-every #'overlay-buffer old-overlays))
                            (should (equal posh-hints--overlays old-overlays))
                            (should (timerp posh-hints--timer))
                            (should (memq posh-hints--timer timer-idle-list))
                            ;; An answer for the old version (one that crossed the edit) is dropped.
                            (posh-hints--paint (current-buffer) old-version region [])
                            (should (equal posh-hints--overlays old-overlays))
                            (should (cl-every #'overlay-buffer old-overlays))
                            ;; Emacs is idle: the timer runs (batch Emacs runs no idle timers by itself).
                            (let ((timer posh-hints--timer))
                              (apply (timer--function timer) (timer--args timer)))
                            (posh-test--wait "hints of the edited script" #'posh-test--hints-shown-p)
                            (should (equal (posh-test--shown-hints) (posh-test--server-hints)))
                            (should (> (length posh-hints--overlays) (length old-overlays))))))

(ert-deftest posh-test-scrolling-asks-for-uncovered-text ()
  "Scrolling to text the hints shown do not cover asks for hints; covered text does not."
  (posh-test--with-server "count.sh" posh-test--script
    (posh-test--wait "hints" #'posh-test--hints-shown-p)
    (should (posh-hints--covers-p (selected-window)))
    (posh-hints--after-scroll (selected-window) (point-min))
    (posh-hints--after-window-change)
    (should (null posh-hints--timer))
    ;; As if the hints shown were of the first line only.
    (setcar (cddr posh-hints--covered) (line-end-position 1))
    (posh-hints--after-scroll (selected-window) (point-min))
    (should (timerp posh-hints--timer))
    (let ((timer posh-hints--timer))
      (apply (timer--function timer) (timer--args timer)))
    (posh-test--wait "hints for the window" (lambda () (posh-hints--covers-p (selected-window))))
    (should (equal (posh-test--shown-hints) (posh-test--server-hints)))))

(ert-deftest posh-test-server-refresh-request-repaints ()
  "When posh-lsp reloads its world it asks for a refresh, and the hints are asked anew."
  (posh-test--with-server "count.sh" posh-test--script
                          (posh-test--wait "hints" #'posh-test--hints-shown-p)
                          (let ((expected (posh-test--shown-hints)))
                            (posh-hints--delete-overlays)
                            (should (null posh-hints--overlays))
                            ;; A configuration change reloads the server's world, which then sends
                            ;; workspace/inlayHint/refresh (we said we support it).
                            (jsonrpc-notify (eglot-current-server) :workspace/didChangeConfiguration
                                            (list :settings (make-hash-table)))
                            (posh-test--wait "hints after the refresh" #'posh-test--hints-shown-p)
                            (should (equal (posh-test--shown-hints) expected)))))

(ert-deftest posh-test-hints-mode-off-removes-overlays ()
  "Turning `posh-hints-mode' off removes what it showed and its hooks."
  (posh-test--with-server "count.sh" posh-test--script
                          (posh-test--wait "hints" #'posh-test--hints-shown-p)
                          (posh-test--wait "lenses" (lambda () posh-hints--lens-overlays))
                          (let ((overlays (append posh-hints--overlays posh-hints--lens-overlays)))
                            (posh-hints-mode -1)
                            (should (cl-notany #'overlay-buffer overlays))
                            (should (not (memq #'posh-hints--after-change after-change-functions))))))

;;;; Hover

(ert-deftest posh-test-render-markdown ()
  "The renderer removes markdown's markup and keeps its meaning as faces."
  (let ((text (posh--render-markdown
               "```sh\ngrep 'x' a.log\n```\nRuns at **@logs**: see `b` and [docs](https://x).\n\n---\n\n# Title\n\\*not emphasis\\*, *emphasis*")))
    (should (equal (substring-no-properties text)
                   (concat "grep 'x' a.log\nRuns at @logs: see b and docs.\n\n"
                           (make-string 40 ?─) "\n\nTitle\n*not emphasis*, emphasis")))
    (let ((at (string-match "@logs" text)))
      (should (memq 'bold (ensure-list (get-text-property at 'face text)))))
    (let ((at (string-match " b " text)))
      (should (eq (get-text-property (1+ at) 'face text) 'posh-hover-code-face)))
    (let ((at (string-match "emphasis\\'" text)))
      (should (memq 'italic (ensure-list (get-text-property at 'face text)))))))

(ert-deftest posh-test-hover-without-markdown-mode ()
  "Hover reaches eldoc rendered: the server's bold words bold, no markup left."
  (let ((posh-hover-render-markdown t))   ; Even where markdown-mode is installed.
    (posh-test--with-server "count.sh" posh-test--script
                            (should (memq #'posh-hover-eldoc-function eldoc-documentation-functions))
                            (should (not (memq #'eglot-hover-eldoc-function eldoc-documentation-functions)))
                            (goto-char (point-min))
                            (search-forward "grep")
                            (goto-char (match-beginning 0))
                            (let* ((raw (plist-get (plist-get (jsonrpc-request (eglot-current-server) :textDocument/hover
                                                                               (eglot--TextDocumentPositionParams))
                                                              :contents)
                                                   :value))
                                   (shown nil))
                              (should (posh-hover-eldoc-function (lambda (text &rest _) (setq shown (or text 'none)))))
                              (posh-test--wait "hover" (lambda () shown))
                              (should (stringp shown))
                              (should (string-search "grep é🎉" shown))
                              (should (not (string-match-p "\\*\\*\\|```" shown)))
                              (let ((start 0) (bold 0))
                                (while (string-match "\\*\\*\\([^*\n]+\\)\\*\\*" raw start)
                                  (setq start (match-end 0))
                                  (let ((at (string-search (match-string 1 raw) shown)))
                                    (should at)
                                    (should (memq 'bold (ensure-list (get-text-property at 'face shown))))
                                    (cl-incf bold)))
                                (should (> bold 0)))))))

;;;; Registration with eglot

(ert-deftest posh-test-loading-changes-nothing-in-eglot ()
  "Loading posh.el leaves `eglot-server-programs' and eglot's hooks as they were."
  (let* ((emacs (expand-file-name invocation-name invocation-directory))
         (form `(progn
                  (setq package-directory-list ',package-directory-list)
                  (package-initialize)
                  (require 'eglot)
                  (let ((programs (copy-tree eglot-server-programs))
                        (hook (copy-sequence eglot-managed-mode-hook)))
                    (add-to-list 'load-path ,(directory-file-name (expand-file-name ".." posh-test--dir)))
                    (require 'posh)
                    (princ (if (and (equal programs eglot-server-programs)
                                    (equal hook eglot-managed-mode-hook)
                                    (eq (cdr (assoc "\\.posh\\'" auto-mode-alist))
                                        'posh-annotation-mode))
                               "unchanged" "changed")))))
         (output (with-temp-buffer
                   (call-process emacs nil t nil "-Q" "--batch" "--eval" (prin1-to-string form))
                   (buffer-string))))
    (should (string-suffix-p "unchanged" (string-trim output)))))

(ert-deftest posh-test-setup-keeps-bash-language-server ()
  "Scripts posh is not configured for keep eglot's server; `teardown' restores all."
  (let* ((dir (file-name-as-directory (make-temp-file "posh-plain-" t)))
         (configured (file-name-as-directory (make-temp-file "posh-conf-" t)))
         (process-environment (append (list "POSH_CONFIG="
                                            (concat "XDG_CONFIG_HOME=" dir "xdg"))
                                      process-environment))
         (before (copy-tree eglot-server-programs))
         (bash (let ((default-directory dir))
                 (with-temp-buffer
                   (setq buffer-file-name (expand-file-name "a.sh" dir))
                   (delay-mode-hooks (sh-mode))
                   (nth 3 (eglot--guess-contact)))))
         (posh-lsp-program "/opt/posh/posh-lsp"))
    (with-temp-file (expand-file-name "posh.toml" configured) (insert ""))
    (unwind-protect
        (cl-flet ((contact-in (directory)
                              (let ((default-directory directory))
                                (with-temp-buffer
                                  (setq buffer-file-name (expand-file-name "a.sh" directory))
                                  (delay-mode-hooks (sh-mode))
                                  (cl-destructuring-bind (_modes _project class contact _id)
                                      (eglot--guess-contact)
                                    (cons class contact))))))
          (should (equal bash '("bash-language-server" "start")))
          (let ((posh-eglot-shell-scripts 'configured))
            (posh-eglot-setup)
            (should (equal (contact-in dir) (cons 'eglot-lsp-server bash)))
            (should (equal (contact-in configured) '(posh-eglot-server "/opt/posh/posh-lsp")))
            ;; A posh.toml of the user's configures every project.
            (make-directory (expand-file-name "xdg/posh" dir) t)
            (with-temp-file (expand-file-name "xdg/posh/posh.toml" dir) (insert ""))
            (should (equal (contact-in dir) '(posh-eglot-server "/opt/posh/posh-lsp")))
            (delete-directory (expand-file-name "xdg" dir) t))
          (let ((posh-eglot-shell-scripts 'all))
            (posh-eglot-setup)
            (should (equal (contact-in dir) '(posh-eglot-server "/opt/posh/posh-lsp"))))
          (let ((posh-eglot-shell-scripts nil))
            (posh-eglot-setup)
            (should (equal (contact-in configured) (cons 'eglot-lsp-server bash))))
          ;; Annotation files always get posh-lsp, with language id "posh".
          (let ((default-directory dir))
            (with-temp-buffer
              (setq buffer-file-name (expand-file-name "a.posh" dir))
              (delay-mode-hooks (posh-annotation-mode))
              (cl-destructuring-bind (_modes _project class contact id) (eglot--guess-contact)
                (should (eq class 'posh-eglot-server))
                (should (equal contact '("/opt/posh/posh-lsp")))
                (should (equal id "posh")))))
          (posh-eglot-teardown)
          (should (equal eglot-server-programs before))
          (should (not (memq #'posh--eglot-managed eglot-managed-mode-hook))))
      (posh-eglot-teardown)
      (delete-directory dir t)
      (delete-directory configured t))))

(ert-deftest posh-test-annotation-file-gets-posh-lsp ()
  "An annotation file is served by posh-lsp with language id posh; no hints there."
  (posh-test--with-server "annotations/csv.posh"
                          "csvcut[filters_input]:\n- PARAMS:\n  - type:input_file, size:list, splitable\n"
                          (should (eq major-mode 'posh-annotation-mode))
                          (should (equal (eglot--language-id (eglot-current-server)) "posh"))
                          (posh-test--wait "diagnostics" (lambda () (flymake-diagnostics)))
                          (should (= (line-number-at-pos (flymake-diagnostic-beg (car (flymake-diagnostics)))) 3))))

;;;; Annotation mode

(defun posh-test--face-at (text &optional nth)
  "The face at the NTH (default 1st) occurrence of TEXT in the current buffer."
  (save-excursion
    (goto-char (point-min))
    (dotimes (_ (or nth 1)) (search-forward text))
    (get-text-property (match-beginning 0) 'face)))

(ert-deftest posh-test-annotation-font-lock ()
  "Headers, sections, fields, values, strings, comments and examples get their faces."
  (with-temp-buffer
    (insert "# The project's tools.\n"
            "grep[filters_input, output_ratio:0.5]:\n"
            "- FLAGS:\n"
            "  - short:c, long:count\n"
            "- OPTPARAMS:\n"
            "  - short:e, type:str, size:1, multiple, desc:\"a # pattern\"\n"
            "- PARAMS:\n"
            "  - type:input_file, size:list, splittable\n"
            "- EXAMPLES:\n"
            "  - grep -c \"#\" type a.log\n"
            "- BOGUS:\n"
            "git status:\n"
            "cat: PARAMS:[(type:input_file,size:list)]\n")
    (posh-annotation-mode)
    (font-lock-ensure)
    (should (eq (posh-test--face-at "The project") 'font-lock-comment-face))
    (should (eq (posh-test--face-at "grep") 'font-lock-function-name-face))
    (should (eq (posh-test--face-at "filters_input") 'font-lock-builtin-face))
    (should (eq (posh-test--face-at "output_ratio") 'font-lock-builtin-face))
    (should (eq (posh-test--face-at "0.5") 'font-lock-constant-face))
    (should (eq (posh-test--face-at "FLAGS") 'font-lock-keyword-face))
    (should (eq (posh-test--face-at "short") 'font-lock-builtin-face))
    (should (eq (posh-test--face-at "count") 'font-lock-variable-name-face))
    (should (eq (posh-test--face-at "str") 'font-lock-constant-face))
    (should (eq (posh-test--face-at "a # pattern") 'font-lock-string-face))
    (should (eq (posh-test--face-at "input_file") 'font-lock-constant-face))
    (should (eq (posh-test--face-at "splittable") 'font-lock-builtin-face))
    (should (eq (posh-test--face-at "EXAMPLES") 'font-lock-keyword-face))
    ;; An example is a command line: no comment, no string, no keyword in it.
    (should (eq (posh-test--face-at "grep -c") 'posh-annotation-example-face))
    (should (eq (posh-test--face-at "#\" type") 'posh-annotation-example-face))
    (should (eq (posh-test--face-at "type a.log") 'posh-annotation-example-face))
    (should (eq (posh-test--face-at "a.log") 'posh-annotation-example-face))
    (should (eq (posh-test--face-at "BOGUS") 'font-lock-warning-face))
    (should (eq (posh-test--face-at "git status") 'font-lock-function-name-face))
    (should (eq (posh-test--face-at "status") 'font-lock-function-name-face))
    (should (eq (posh-test--face-at "cat") 'font-lock-function-name-face))
    (should (eq (posh-test--face-at "PARAMS" 2) 'font-lock-keyword-face))
    (should (eq (posh-test--face-at "PARAMS" 3) 'font-lock-keyword-face))
    ;; After the examples, `#' is a comment again.
    (goto-char (point-max))
    (insert "- FLAGS: # a comment\n")
    (font-lock-ensure)
    (should (eq (posh-test--face-at "a comment") 'font-lock-comment-face))))

(defconst posh-test--indented
  "# A comment.
grep[filters_input]:
- FLAGS:
  - short:c, long:count

  - short:v
# Between sections.
- PARAMS:
  - type:input_file, size:list, splittable
- EXAMPLES:
  - grep -c x a.log
cat: PARAMS:[(type:input_file,size:list)]
"
  "An annotation file as `posh-annotation-mode' indents it.")

(ert-deftest posh-test-annotation-indentation ()
  "TAB puts every line where the layout wants it, whatever its indentation before."
  (with-temp-buffer
    (insert (replace-regexp-in-string
             "^[ \t]*" (lambda (_) (make-string (random 5) ?\s)) posh-test--indented))
    (posh-annotation-mode)
    (goto-char (point-min))
    (while (not (eobp))
      (indent-for-tab-command)
      (forward-line 1))
    ;; TAB indents a blank line too (for an item there): only that whitespace differs.
    (delete-trailing-whitespace)
    (should (equal (buffer-string) posh-test--indented))
    ;; A blank line after an item is indented for the next item, after a header for a section.
    (erase-buffer)
    (insert "grep:\n\n- FLAGS:\n  - short:c\n\n")
    (goto-char (point-min))
    (forward-line 1)
    (indent-for-tab-command)
    (should (= (current-column) 0))
    (goto-char (point-max))
    (indent-for-tab-command)
    (should (= (current-column) 2))
    ;; Point inside the text stays on the same character.
    (insert "     - short:v")
    (search-backward "v")
    (indent-for-tab-command)
    (should (eq (char-after) ?v))
    (should (= (current-indentation) 2))))

(ert-deftest posh-test-shipped-annotations-keep-their-indentation ()
  "Indenting each file of annotations/ changes nothing: the mode follows the real layout."
  (let ((files (directory-files (expand-file-name "annotations" posh-test--repo) t "\\.posh\\'")))
    (should files)
    (dolist (file files)
      (with-temp-buffer
        (insert-file-contents file)
        (posh-annotation-mode)
        (let ((before (buffer-string)))
          (indent-region (point-min) (point-max))
          (should (equal (list file (buffer-string)) (list file before))))))))

(ert-deftest posh-test-keywords-match-the-language-reference ()
  "Every keyword of docs/annotation-language.md is highlighted by posh.el."
  (let ((doc (expand-file-name "docs/annotation-language.md" posh-test--repo))
        (known (append posh-annotation-sections posh-annotation-command-options
                       posh-annotation-argument-fields posh-annotation-values))
        (found '()))
    (with-temp-buffer
      (insert-file-contents doc)
      (goto-char (point-min))
      (let ((end (save-excursion (search-forward "<!-- keywords:end"))))
        (search-forward "<!-- keywords:start")
        (while (re-search-forward "^| `\\([a-z_A-Z]+\\)`\\(?: *([^`|]*`\\([a-z_]+\\)`)\\)?" end t)
          (push (match-string 1) found)
          (when (match-string 2) (push (match-string 2) found)))))
    (should (> (length found) 40))
    (should (equal (cl-remove-if (lambda (k) (member k known)) found) nil))))

;;; posh-test.el ends here
