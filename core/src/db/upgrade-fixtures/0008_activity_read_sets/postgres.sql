--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: activity_log_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.activity_log_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      begin raise exception 'activity_log is append-only'; end $$;


--
-- Name: activity_pending_no_update(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.activity_pending_no_update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      begin raise exception 'activity_pending is append-only'; end $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: activity_event_ids; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activity_event_ids (
    recorded_by text NOT NULL,
    event_id text NOT NULL,
    summary text
);


--
-- Name: activity_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activity_log (
    sequence bigint NOT NULL,
    event_id text NOT NULL,
    recorded_by text NOT NULL,
    event_type text NOT NULL,
    subject_id text,
    data_point_id text,
    attribute text,
    application_id text NOT NULL,
    application_user text,
    data_store_name text,
    data_store_server text,
    data_store_entity_name text,
    country text,
    subdivision text,
    city text,
    report_only integer NOT NULL,
    event_time text NOT NULL,
    recorded_date text NOT NULL,
    summary text,
    hash text NOT NULL,
    points text
);


--
-- Name: activity_pending; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activity_pending (
    id bigint NOT NULL,
    event_id text NOT NULL,
    recorded_by text NOT NULL,
    event_type text NOT NULL,
    subject_id text,
    data_point_id text,
    attribute text,
    application_id text NOT NULL,
    application_user text,
    data_store_name text,
    data_store_server text,
    data_store_entity_name text,
    country text,
    subdivision text,
    city text,
    report_only integer NOT NULL,
    event_time text NOT NULL,
    recorded_date text NOT NULL,
    summary text,
    points text
);


--
-- Name: activity_pending_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.activity_pending_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: activity_pending_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.activity_pending_id_seq OWNED BY public.activity_pending.id;


--
-- Name: alerts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alerts (
    id text NOT NULL,
    rule_key text NOT NULL,
    level text NOT NULL,
    message text NOT NULL,
    entity_id text,
    attribute text,
    datapoint_id text,
    event_type text NOT NULL,
    created_date text NOT NULL
);


--
-- Name: applications; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.applications (
    id text NOT NULL,
    name text NOT NULL,
    api_key_hash text NOT NULL,
    attributes text NOT NULL,
    admin integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: attribute_definitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.attribute_definitions (
    key text NOT NULL,
    name text,
    hint text,
    schema text NOT NULL,
    repeatable integer DEFAULT 0 NOT NULL,
    indexed integer DEFAULT 0 NOT NULL,
    immutable integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: datapoint_regulations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.datapoint_regulations (
    datapoint_id text NOT NULL,
    regulation text NOT NULL
);


--
-- Name: datapoint_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.datapoint_tags (
    datapoint_id text NOT NULL,
    tag text NOT NULL
);


--
-- Name: datapoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.datapoints (
    id text NOT NULL,
    entity_id text NOT NULL,
    attribute text NOT NULL,
    definition_key text NOT NULL,
    structure_root_id text,
    report_only integer DEFAULT 0 NOT NULL,
    sensitivity text NOT NULL,
    subject_key_id text,
    ciphertext bytea,
    blind_index text,
    country text,
    subdivision text,
    city text,
    expires_at text,
    auto_delete integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: definition_entity_types; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.definition_entity_types (
    definition_key text NOT NULL,
    entity_type text NOT NULL
);


--
-- Name: definition_regulations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.definition_regulations (
    definition_key text NOT NULL,
    regulation text NOT NULL
);


--
-- Name: definition_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.definition_tags (
    definition_key text NOT NULL,
    tag text NOT NULL
);


--
-- Name: encryption_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.encryption_keys (
    id text NOT NULL,
    public_key_pem text NOT NULL,
    status text NOT NULL,
    created_date text NOT NULL
);


--
-- Name: entities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entities (
    id text NOT NULL,
    type text NOT NULL,
    legal_hold integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    updated_date text NOT NULL
);


--
-- Name: entity_prohibitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entity_prohibitions (
    entity_id text NOT NULL,
    operation text NOT NULL,
    rule_key text NOT NULL,
    created_date text NOT NULL
);


--
-- Name: entity_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entity_tags (
    entity_id text NOT NULL,
    tag text NOT NULL
);


--
-- Name: entity_types; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entity_types (
    key text NOT NULL,
    name text,
    description text,
    system integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: idle_retention; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idle_retention (
    entity_id text NOT NULL,
    definition_key text NOT NULL,
    days integer NOT NULL,
    next_check text NOT NULL
);


--
-- Name: kysely_migration; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.kysely_migration (
    name character varying(255) NOT NULL,
    "timestamp" character varying(255) NOT NULL
);


--
-- Name: kysely_migration_lock; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.kysely_migration_lock (
    id character varying(255) NOT NULL,
    is_locked integer DEFAULT 0 NOT NULL
);


--
-- Name: regulations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.regulations (
    key text NOT NULL,
    name text,
    url text,
    builtin integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: rules; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rules (
    key text NOT NULL,
    name text,
    type text NOT NULL,
    definition text NOT NULL,
    execution_order integer NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: rules_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rules_version (
    id integer NOT NULL,
    version integer NOT NULL
);


--
-- Name: subject_key_wraps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.subject_key_wraps (
    subject_key_id text NOT NULL,
    encryption_key_id text NOT NULL,
    wrapped_key bytea NOT NULL,
    created_date text NOT NULL
);


--
-- Name: subject_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.subject_keys (
    id text NOT NULL,
    entity_id text NOT NULL,
    encryption_key_id text NOT NULL,
    wrapped_key bytea NOT NULL,
    created_date text NOT NULL
);


--
-- Name: tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tags (
    name text NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: activity_pending id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity_pending ALTER COLUMN id SET DEFAULT nextval('public.activity_pending_id_seq'::regclass);


--
-- Data for Name: activity_event_ids; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.activity_event_ids VALUES ('1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'crm-1', '{"eventType":"STORE","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}');
INSERT INTO public.activity_event_ids VALUES ('1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'crm-2', '{"eventType":"READ","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}');
INSERT INTO public.activity_event_ids VALUES ('1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'crm-3', '{"eventType":"DELETE","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}');


--
-- Data for Name: activity_log; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.activity_log VALUES (1, 'b3d0bdad-4f97-4e97-8e8e-88c851652741', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u1', '01a227c1-da3d-7087-9265-6dbae9199c7b', 'EMAIL', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.477Z', NULL, 'ea4586857f3e77130a18764aac6ecf720da436ef7206812d948acd03538fcc7b', NULL);
INSERT INTO public.activity_log VALUES (2, '3ffbe9a3-7477-4cb2-b652-194e2115ac09', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u1', '01a227c1-da3d-7087-9265-703c70c30ec6', 'NAME', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.477Z', NULL, '4e63e40a54df46623c5043736a15d71e0b61e92690e6172821bed7ec15a42e4c', NULL);
INSERT INTO public.activity_log VALUES (3, '2c3c4c17-34a2-4950-a249-ec565410e6df', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u1', '01a227c1-da3d-7087-9265-75d053416063', 'AGE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.477Z', NULL, '1a381699b6501a258b718cb1e4a804acb9ee2e6edcc4429408761c8c51f1e032', NULL);
INSERT INTO public.activity_log VALUES (4, '197c0852-2d1e-48b3-aaca-bb40dc03a3e4', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u1', '01a227c1-da3d-7087-9265-788aa9fa96bb', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.477Z', NULL, '1fbe6f6baa9320243493a510b4652c3a5d03d78c769853559b9a8ebc4b390f15', NULL);
INSERT INTO public.activity_log VALUES (5, 'f830e6c6-3c7b-490d-ae1c-41bc721a8ef8', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u1', '01a227c1-da3d-7087-9265-7e40231d9f63', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.477Z', NULL, 'c7c6692acbf49c2d361ac3e0d125c5ec667cf50365f3bad5efd898c2579d5476', NULL);
INSERT INTO public.activity_log VALUES (6, 'befb6f15-80ff-417e-a29a-8cf8a1fa28d6', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u2', '01a227c1-da63-732e-b66d-e20b14a33b4e', 'EMAIL', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.523Z', NULL, 'c1d2198f4683c3dad1a74d359860f53b9bfe235d194da9a093294a5ccbea03e0', NULL);
INSERT INTO public.activity_log VALUES (7, '9b449be7-df08-4d93-90df-e9ed3719539d', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u2', '01a227c1-da63-732e-b66d-e744786f3792', 'NAME', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.523Z', NULL, 'db722af0404b25ce5e0b82f4d98c9df96e58998c0a045b3c5ce36205fa52ee1b', NULL);
INSERT INTO public.activity_log VALUES (8, 'cdf85771-523b-4eaf-8852-8806f499fd7d', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u2', '01a227c1-da63-732e-b66d-ea47f4b07a62', 'AGE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.523Z', NULL, '74754b7ebb79a0aadffb6398bc198bbf9fc74d9a486428110f6638360a8c9752', NULL);
INSERT INTO public.activity_log VALUES (9, 'a3d4c42d-f074-474d-9f82-00dedeb65856', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u2', '01a227c1-da63-732e-b66d-ef724a43e911', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.523Z', NULL, '421106621dbbaf96eb78f042289edaa20fc6ac8c152c9f51267a17a00ba22d7f', NULL);
INSERT INTO public.activity_log VALUES (10, 'f1af9694-7737-4655-adc2-f447043fc168', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u2', '01a227c1-da63-732e-b66d-f02095618152', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.523Z', NULL, 'a2dd09e3e4d69c2ae2c29ee06e9e83562eca34093e90f069339c217b0fd04076', NULL);
INSERT INTO public.activity_log VALUES (11, '5c3ddcaa-2362-4eee-bce7-2ee2a0c164a6', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u3', '01a227c1-da97-773e-a6be-529ad25f5207', 'EMAIL', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.560Z', '2026-11-29T14:42:25.567Z', NULL, '68b36b6c82587b10cb93bfedd61f7f20233a9af727c791dba756361a73bba9ff', NULL);
INSERT INTO public.activity_log VALUES (12, '7c8b85f8-4a19-467c-bab9-03ddd7b9fefa', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u3', '01a227c1-da98-750d-9452-1f50ec014c68', 'NAME', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.560Z', '2026-11-29T14:42:25.567Z', NULL, '149060c007628deedbedd69c6ffa68aaac8641d93b16bebb012ddbe83d4ec6a9', NULL);
INSERT INTO public.activity_log VALUES (13, '80a262f6-3e37-4950-bffa-777cb9aa088b', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u3', '01a227c1-da98-750d-9452-20c817297e07', 'AGE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.560Z', '2026-11-29T14:42:25.567Z', NULL, 'c024e8ee2923837ebc3b345975042c81d5fdebc8caa8a6543607ed564655ef00', NULL);
INSERT INTO public.activity_log VALUES (14, '3007b029-2ef1-466d-bb27-3f0866ff2cdf', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u3', '01a227c1-da98-750d-9452-2753d5dfd9ee', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.560Z', '2026-11-29T14:42:25.567Z', NULL, '5f4d62a3ba65ad72bafeb30cef625716f07c5c6061a4fd307d063a9fe4704f07', NULL);
INSERT INTO public.activity_log VALUES (15, 'c6eb06a5-9c1f-4f57-bacd-44a6f606124f', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'u3', '01a227c1-da98-750d-9452-2a32cdb916e7', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:25.560Z', '2026-11-29T14:42:25.567Z', NULL, '48ef4fbcaaed4e39c12fe627516d0429b227faf8f4509b102a9ac113fe892088', NULL);
INSERT INTO public.activity_log VALUES (16, '7f8eef92-df0c-4c7d-b687-c76aee4c01de', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'READ', 'u1', NULL, NULL, '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.585Z', '2026-11-29T14:42:25.586Z', NULL, '2a385f93e908a9269f7b06833589da1aa862e167314f1952aefcff4ddfea1015', '[["01a227c1-da3d-7087-9265-6dbae9199c7b","EMAIL"],["01a227c1-da3d-7087-9265-703c70c30ec6","NAME"],["01a227c1-da3d-7087-9265-75d053416063","AGE"],["01a227c1-da3d-7087-9265-788aa9fa96bb","NOTE"],["01a227c1-da3d-7087-9265-7e40231d9f63","NOTE"]]');
INSERT INTO public.activity_log VALUES (17, 'b94cd13f-0a5d-48cf-ace7-72b763d64edb', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'READ', 'u1', '01a227c1-da3d-7087-9265-6dbae9199c7b', 'EMAIL', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.614Z', '2026-11-29T14:42:25.614Z', NULL, '3e41fa8ea16eebcca57c678ee98004b936b43b3c77b013d43b7ca6600bffe409', NULL);
INSERT INTO public.activity_log VALUES (18, '8a2f6728-6b56-495b-85a2-3c3970833cc6', 'c38bf90b-6e4a-4b70-9836-5ac8fedc763a', 'READ', 'u2', '01a227c1-da63-732e-b66d-e20b14a33b4e', 'EMAIL', 'c38bf90b-6e4a-4b70-9836-5ac8fedc763a', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.644Z', '2026-11-29T14:42:25.644Z', NULL, '73aef24e346ce309d4f35fe9ae26a9736e6dcd486e16357cbd287b2784409475', NULL);
INSERT INTO public.activity_log VALUES (19, 'crm-1', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'STORE', 'cust-1', 'crm/cust-1/email', 'EMAIL', 'crm', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, '2026-11-29T14:42:25.680Z', '2026-11-29T14:42:25.699Z', '{"eventType":"STORE","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}', 'f49d6046aea8aa3e207a9d147a06fd658564b05ee08c8e428802b766abc90103', NULL);
INSERT INTO public.activity_log VALUES (20, 'crm-2', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'READ', 'cust-1', 'crm/cust-1/email', 'EMAIL', 'crm', 'alice', NULL, NULL, NULL, NULL, NULL, NULL, 1, '2026-11-29T14:42:25.718Z', '2026-11-29T14:42:25.727Z', '{"eventType":"READ","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}', 'b0bc8692f8dc4a5cbf35f16f8e4fc97db44443d8eca1c19f60d0aba01c7e43b3', NULL);
INSERT INTO public.activity_log VALUES (21, 'crm-3', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'DELETE', 'cust-1', 'crm/cust-1/email', 'EMAIL', 'crm', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, '2026-11-29T14:42:25.718Z', '2026-11-29T14:42:25.727Z', '{"eventType":"DELETE","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}', '70991ec61e8a740fb63281487c3e0e639dd383b61d20260b2e91ca12e5616f54', NULL);
INSERT INTO public.activity_log VALUES (22, '7102b957-086c-4b38-861a-0f33bf61be92', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'READ', 'u3', NULL, NULL, '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.741Z', '2026-11-29T14:42:25.741Z', NULL, '72e76129f65d7f7a8c7b04a66a5d22acd3a1aa8e50d6feda2866c653d0730771', '[["01a227c1-da98-750d-9452-2753d5dfd9ee","NOTE"],["01a227c1-da98-750d-9452-2a32cdb916e7","NOTE"]]');
INSERT INTO public.activity_log VALUES (23, '211b6b42-9470-4c52-9722-3653df5246b0', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'DELETE', 'u3', '01a227c1-da98-750d-9452-2753d5dfd9ee', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.759Z', '2026-11-29T14:42:25.759Z', NULL, '747fdb393e9eea7e66b1b1a67362db0c144df1483400d11561ac60727163f420', NULL);
INSERT INTO public.activity_log VALUES (24, '86e0ef61-adc3-4544-8f40-3ec32c544f06', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'DELETE', 'u3', '01a227c1-da97-773e-a6be-529ad25f5207', 'EMAIL', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.790Z', '2026-11-29T14:42:25.790Z', NULL, 'ea43f34f1f37c66e239e741aeaf022471a2a817de5468c72656f8d867080408f', NULL);
INSERT INTO public.activity_log VALUES (25, '42aeeefe-3a78-4184-85c2-cc197b676f34', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'DELETE', 'u3', '01a227c1-da98-750d-9452-1f50ec014c68', 'NAME', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.790Z', '2026-11-29T14:42:25.790Z', NULL, '931b33a3231699b9b4d873d50a10e538e16b96b20c8d5915fda37ab6e31c6ac1', NULL);
INSERT INTO public.activity_log VALUES (26, 'bdaabf66-a911-4cac-b2a3-2ac22abefc12', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'DELETE', 'u3', '01a227c1-da98-750d-9452-20c817297e07', 'AGE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.790Z', '2026-11-29T14:42:25.790Z', NULL, 'ef40976c3e439ef111b553c45d68ae6bc47cf822aee2c138429dd3143a19f707', NULL);
INSERT INTO public.activity_log VALUES (27, 'f1721e31-08f8-4b0f-bf97-1833b98763d9', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'DELETE', 'u3', '01a227c1-da98-750d-9452-2a32cdb916e7', 'NOTE', '1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:25.790Z', '2026-11-29T14:42:25.790Z', NULL, 'bdbe47c09d26f24624a88d84c436c8f9ce4987c85825ab06f18b3dea62d0fba3', NULL);


--
-- Data for Name: activity_pending; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: alerts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: applications; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.applications VALUES ('1a09be6b-b2bc-4b5e-afc5-cb311f0c66a3', 'admin', '1b3af7d2f1f3428ee7d76d5be730b93565efcf2ecbb7819caf9002bca23d4545', '["*"]', 1, '2026-11-29T14:42:22.962Z', '2026-11-29T14:42:22.962Z');
INSERT INTO public.applications VALUES ('c38bf90b-6e4a-4b70-9836-5ac8fedc763a', 'billing', '2e0069a6d473cb8444b2f0c758354a65543b67193b9f252380dacf5ca480926e', '["EMAIL"]', 0, '2026-11-29T14:42:25.355Z', '2026-11-29T14:42:25.355Z');


--
-- Data for Name: attribute_definitions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.attribute_definitions VALUES ('EMAIL', NULL, NULL, '"string"', 0, 1, 0, '2026-11-29T14:42:25.058Z', '2026-11-29T14:42:25.058Z');
INSERT INTO public.attribute_definitions VALUES ('NAME', NULL, NULL, '{"first":"string","last":"string"}', 0, 1, 0, '2026-11-29T14:42:25.163Z', '2026-11-29T14:42:25.163Z');
INSERT INTO public.attribute_definitions VALUES ('AGE', NULL, NULL, '"int"', 0, 0, 0, '2026-11-29T14:42:25.241Z', '2026-11-29T14:42:25.241Z');
INSERT INTO public.attribute_definitions VALUES ('NOTE', NULL, NULL, '"string"', 1, 0, 0, '2026-11-29T14:42:25.287Z', '2026-11-29T14:42:25.287Z');


--
-- Data for Name: datapoint_regulations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.datapoint_regulations VALUES ('01a227c1-da3d-7087-9265-6dbae9199c7b', 'GDPR');
INSERT INTO public.datapoint_regulations VALUES ('01a227c1-da63-732e-b66d-e20b14a33b4e', 'GDPR');


--
-- Data for Name: datapoint_tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.datapoint_tags VALUES ('01a227c1-da3d-7087-9265-6dbae9199c7b', 'pii');
INSERT INTO public.datapoint_tags VALUES ('01a227c1-da3d-7087-9265-6dbae9199c7b', 'mailed');
INSERT INTO public.datapoint_tags VALUES ('01a227c1-da63-732e-b66d-e20b14a33b4e', 'pii');
INSERT INTO public.datapoint_tags VALUES ('01a227c1-da63-732e-b66d-e20b14a33b4e', 'mailed');


--
-- Data for Name: datapoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.datapoints VALUES ('01a227c1-da3d-7087-9265-6dbae9199c7b', 'u1', 'EMAIL', 'EMAIL', NULL, 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x0165395806c485bb27c3d83b952a6be5e4aa9551f121a4548d7bf4dcea0ba77d817b099bc1badceeca2ceae23c', 'Ag9YFFj0woR_t7YS_MKG4JX91oWIrWUSjP7BKNpeAhw', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da3d-7087-9265-703c70c30ec6', 'u1', 'NAME', 'NAME', NULL, 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x01ab034a4b8375ad0e6953c97ce894298c10be4e1188ab5e70afafbe91d99fb44a53ceb96fad97e62d409eab8b78ccb90ef8e26d5672c2f2', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da44-74b8-a777-5adc746945cf', 'u1', 'NAME.first', 'NAME', '01a227c1-da3d-7087-9265-703c70c30ec6', 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x01b4b5e5bbe37ad89eab268489fe9e3d6c55fbe51949b19851f0873d77c58edf78b7', 'sFlHooPO3I_lR_cfvInEjATRZkO_FiWBHaQxpGBuxyQ', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da44-74b8-a777-5d21b234d0f5', 'u1', 'NAME.last', 'NAME', '01a227c1-da3d-7087-9265-703c70c30ec6', 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x018d737c9b277a37ecb4f709f29e6043b221a3996d03b8c4c12fd9c717070a9436', 'C-awtNaxN8WeszQmHIjAZMNvvv817Fe5T8-5IvJkyoc', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da3d-7087-9265-75d053416063', 'u1', 'AGE', 'AGE', NULL, 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x0164f105c9ab382ceb98068f4895c50ea97909818c580cf4922921f8e16677', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da3d-7087-9265-788aa9fa96bb', 'u1', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x0176428fe3245b8a2afcb6d8de6594e80409e01db74580f183ca0a4b1216fd9aaf', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da3d-7087-9265-7e40231d9f63', 'u1', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', '2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', '\x01e8e073464602f2dc484b88a8e9ffc7170957ff6e7c2c5f0a95515a3350c52313', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.471Z', '2026-11-29T14:42:25.471Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da63-732e-b66d-e20b14a33b4e', 'u2', 'EMAIL', 'EMAIL', NULL, 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x01201ae2f37d170eb0aed2908dea548b4b7a0a9a67472f3d87acf2a07058d3ca25d55ebca56e0f7635d010d9df', 'Ld9y_d25GTAn4ojirIacYjYcAwSp4lZ0jzHkuQIMR2k', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da63-732e-b66d-e744786f3792', 'u2', 'NAME', 'NAME', NULL, 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x018e16d6ebba4c4f20a6c0246e48d9052b6a1d2c8a2c0c059291c293ebe0894335e608b75b747edc1186c6ee302d2ced9c6d9d653705b4d1', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da73-70fd-87e4-ddc1a64dbdfd', 'u2', 'NAME.first', 'NAME', '01a227c1-da63-732e-b66d-e744786f3792', 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x01834a49c3ba7545d1b1b1c5bc674b8b6fe80580ec461c8338c24303b64f877ae0e3', 'sFlHooPO3I_lR_cfvInEjATRZkO_FiWBHaQxpGBuxyQ', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da73-70fd-87e4-e21597ead58c', 'u2', 'NAME.last', 'NAME', '01a227c1-da63-732e-b66d-e744786f3792', 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x0165e99744ffd7df89dc54fbbbc8df5588834244fc8c0e8e0d52ff99704bad0d6b', 'Yja39ObOBkwHLrCVyxRPeXefFk1yoReHIXKvG4o45mk', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da63-732e-b66d-ea47f4b07a62', 'u2', 'AGE', 'AGE', NULL, 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x01cf541ed06a4306ee8054864aa15e60008306da1edeeda34c41f0824c8051', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da63-732e-b66d-ef724a43e911', 'u2', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x0146a792688f9b2d5a23d72a9d7f2405bc6996934e90ffda2adae370a4f022fed8', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');
INSERT INTO public.datapoints VALUES ('01a227c1-da63-732e-b66d-f02095618152', 'u2', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', 'd0bbe658-a784-4627-863f-564f7027aa7a', '\x01ac41f969a77606adef070750dbc6309497b289adb6dd2d8b2844c0adaeb2e74c', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:25.507Z', '2026-11-29T14:42:25.507Z');


--
-- Data for Name: definition_entity_types; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: definition_regulations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.definition_regulations VALUES ('EMAIL', 'GDPR');


--
-- Data for Name: definition_tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.definition_tags VALUES ('EMAIL', 'pii');


--
-- Data for Name: encryption_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.encryption_keys VALUES ('b94367a1c5c3442044246935a7cc480d5db50771e5ce83963a495bac7705b36d', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvp5GC3ALqsduAZc+6UNk
rUtCPbYkB/nHPAWe5DGNx1so//u7ZlICYVdUIn1bBxsID4irSxezInhb8QTzg55q
pWMXNKO213zFFHIk17X+TIqO6iBU1NFEF2KFDJDCnAEc1PwPXVU6mvwinxDgVtLL
wXkhruoibOPZBSJ1z1G12fnh1S4cc7w8no8Ig3j4b4Wj87cw847ZEpLiXF4LC0i4
kGFQEpxuFzXvGpvKEa7V3EpAejzDsAQrTnOjUhkpUTiXlkZ8i4SKfoPOaeMP1khZ
GbPBHJ3F0lB2Dkb6zI3cQ7ApBtOa3e9+AViNOtTy10XuBWlVQs5yFIubIsLvdsIO
ewIDAQAB
-----END PUBLIC KEY-----
', 'active', '2026-11-29T14:42:22.978Z');


--
-- Data for Name: entities; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.entities VALUES ('u1', 'datasubject', 0, '2026-11-29T14:42:25.464Z', '2026-11-29T14:42:25.464Z');
INSERT INTO public.entities VALUES ('u2', 'datasubject', 0, '2026-11-29T14:42:25.502Z', '2026-11-29T14:42:25.502Z');
INSERT INTO public.entities VALUES ('cust-1', 'datasubject', 0, '2026-11-29T14:42:25.691Z', '2026-11-29T14:42:25.691Z');


--
-- Data for Name: entity_prohibitions; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: entity_tags; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: entity_types; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.entity_types VALUES ('datasubject', 'Data subject', 'A person the data is about', 1, '2026-11-29T14:42:22.948Z', '2026-11-29T14:42:22.948Z');


--
-- Data for Name: idle_retention; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: kysely_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.kysely_migration VALUES ('0001_registry', '2026-11-29T14:42:22.548Z');
INSERT INTO public.kysely_migration VALUES ('0002_activity', '2026-11-29T14:42:22.614Z');
INSERT INTO public.kysely_migration VALUES ('0003_rules', '2026-11-29T14:42:22.751Z');
INSERT INTO public.kysely_migration VALUES ('0004_dataplane', '2026-11-29T14:42:22.777Z');
INSERT INTO public.kysely_migration VALUES ('0005_key_rotation', '2026-11-29T14:42:22.819Z');
INSERT INTO public.kysely_migration VALUES ('0006_activity_sealing', '2026-11-29T14:42:22.891Z');
INSERT INTO public.kysely_migration VALUES ('0007_activity_lean', '2026-11-29T14:42:22.899Z');
INSERT INTO public.kysely_migration VALUES ('0008_activity_read_sets', '2026-11-29T14:42:22.901Z');


--
-- Data for Name: kysely_migration_lock; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.kysely_migration_lock VALUES ('migration_lock', 0);


--
-- Data for Name: regulations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.regulations VALUES ('GDPR', 'General Data Protection Regulation', 'https://eur-lex.europa.eu/eli/reg/2016/679/oj', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');
INSERT INTO public.regulations VALUES ('CCPA', 'California Consumer Privacy Act', 'https://oag.ca.gov/privacy/ccpa', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');
INSERT INTO public.regulations VALUES ('HIPAA', 'Health Insurance Portability and Accountability Act', 'https://www.hhs.gov/hipaa/index.html', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');
INSERT INTO public.regulations VALUES ('PCI_DSS', 'Payment Card Industry Data Security Standard', 'https://www.pcisecuritystandards.org/', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');
INSERT INTO public.regulations VALUES ('COPPA', 'Children''s Online Privacy Protection Act', 'https://www.ftc.gov/legal-library/browse/rules/childrens-online-privacy-protection-rule-coppa', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');
INSERT INTO public.regulations VALUES ('LGPD', 'Lei Geral de Proteção de Dados Pessoais', 'https://www.planalto.gov.br/ccivil_03/_ato2015-2018/2018/lei/l13709.htm', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');
INSERT INTO public.regulations VALUES ('PIPEDA', 'Personal Information Protection and Electronic Documents Act', 'https://www.priv.gc.ca/en/privacy-topics/privacy-laws-in-canada/the-personal-information-protection-and-electronic-documents-act-pipeda/', 1, '2026-11-29T14:42:22.955Z', '2026-11-29T14:42:22.955Z');


--
-- Data for Name: rules; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rules VALUES ('email-tag', NULL, 'data', '{"key":"email-tag","type":"data","constraint":{"type":"attribute","operator":"any","attributes":["EMAIL"]},"action":{"type":"tag","tag":"mailed"}}', 1, '2026-11-29T14:42:25.398Z', '2026-11-29T14:42:25.398Z');


--
-- Data for Name: rules_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rules_version VALUES (1, 1);


--
-- Data for Name: subject_key_wraps; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: subject_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.subject_keys VALUES ('2fd00bf0-141a-4f9f-8d8f-a345fc2b8648', 'u1', 'b94367a1c5c3442044246935a7cc480d5db50771e5ce83963a495bac7705b36d', '\x8fbff663e35f0ac3434f72b22e03e40ce7ad4b586ff2d922ad86db533e76920ea7ed1ba69efd20354f192c58202cd02c6d399afa7f2282e87e037e3fa06223e8c00dccbf6248e0428abf14170bfca71da85dda6adaeb88b58b4f65a86d47fe4e3895dfababa37f7c86de1e39284a9089ca31a660be4e1f7ab59aa3a187468738d73bfad0214ecee7d3cdbb7b356d67182f1a1a5adf2b337d02e40f70a88c68f2cb9acb78148e906bcaee66e863ee4fd94ce2e8517a3f9d77fb27018c28508bdf105546001795d021f19bd1cf575c48ffb4e38e1d8fd2069083b19b03e5d6a9c759320266238a4ac13c7fa10d0bbc649749a44b08109eb7069921f6a3b1e82db5', '2026-11-29T14:42:25.471Z');
INSERT INTO public.subject_keys VALUES ('d0bbe658-a784-4627-863f-564f7027aa7a', 'u2', 'b94367a1c5c3442044246935a7cc480d5db50771e5ce83963a495bac7705b36d', '\x717d8add2b720b2a7474054a8f94d593b8728fd298992a0757a6a02a9066da7c8ae8096761b7ca3c0d18aa335c846bdffd93aa2faf97e1d49d8d860ea834f45b9fcb395663e942d10a9b5df379bdca51c9e2b8becb86e8e215a32581229e8db92012cb7012b5df13bcbbce4d8d784fbbb81ec97fb858ddde88549b411867a8c0759b2a902ea284b4274c055d4e6f5716dbc189285fe8030478730ef56f2440dcd4ec5c34eef51150b8043b461fcd0481d77d5dcf549bfaf8533250e1c124d6d945574350627b21d11b4f68a937fa33ecacd84a617e68eea7e0df851810392d90a8e3ae92b6290e17db00a29873dfd7bab8e81b24128a9c48b34794fcdef1b517', '2026-11-29T14:42:25.507Z');


--
-- Data for Name: tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tags VALUES ('pii', '2026-11-29T14:42:25.062Z', '2026-11-29T14:42:25.062Z');
INSERT INTO public.tags VALUES ('mailed', '2026-11-29T14:42:25.386Z', '2026-11-29T14:42:25.386Z');


--
-- Name: activity_pending_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.activity_pending_id_seq', 27, true);


--
-- Name: activity_event_ids activity_event_ids_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity_event_ids
    ADD CONSTRAINT activity_event_ids_pk PRIMARY KEY (recorded_by, event_id);


--
-- Name: activity_log activity_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity_log
    ADD CONSTRAINT activity_log_pkey PRIMARY KEY (sequence);


--
-- Name: activity_pending activity_pending_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity_pending
    ADD CONSTRAINT activity_pending_pkey PRIMARY KEY (id);


--
-- Name: alerts alerts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alerts
    ADD CONSTRAINT alerts_pkey PRIMARY KEY (id);


--
-- Name: applications applications_api_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.applications
    ADD CONSTRAINT applications_api_key_hash_key UNIQUE (api_key_hash);


--
-- Name: applications applications_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.applications
    ADD CONSTRAINT applications_pkey PRIMARY KEY (id);


--
-- Name: attribute_definitions attribute_definitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attribute_definitions
    ADD CONSTRAINT attribute_definitions_pkey PRIMARY KEY (key);


--
-- Name: datapoint_regulations datapoint_regulations_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.datapoint_regulations
    ADD CONSTRAINT datapoint_regulations_pk PRIMARY KEY (datapoint_id, regulation);


--
-- Name: datapoint_tags datapoint_tags_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.datapoint_tags
    ADD CONSTRAINT datapoint_tags_pk PRIMARY KEY (datapoint_id, tag);


--
-- Name: datapoints datapoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.datapoints
    ADD CONSTRAINT datapoints_pkey PRIMARY KEY (id);


--
-- Name: definition_entity_types definition_entity_types_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.definition_entity_types
    ADD CONSTRAINT definition_entity_types_pk PRIMARY KEY (definition_key, entity_type);


--
-- Name: definition_regulations definition_regulations_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.definition_regulations
    ADD CONSTRAINT definition_regulations_pk PRIMARY KEY (definition_key, regulation);


--
-- Name: definition_tags definition_tags_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.definition_tags
    ADD CONSTRAINT definition_tags_pk PRIMARY KEY (definition_key, tag);


--
-- Name: encryption_keys encryption_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.encryption_keys
    ADD CONSTRAINT encryption_keys_pkey PRIMARY KEY (id);


--
-- Name: entities entities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id);


--
-- Name: entity_prohibitions entity_prohibitions_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entity_prohibitions
    ADD CONSTRAINT entity_prohibitions_pk PRIMARY KEY (entity_id, operation);


--
-- Name: entity_tags entity_tags_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entity_tags
    ADD CONSTRAINT entity_tags_pk PRIMARY KEY (entity_id, tag);


--
-- Name: entity_types entity_types_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entity_types
    ADD CONSTRAINT entity_types_pkey PRIMARY KEY (key);


--
-- Name: idle_retention idle_retention_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idle_retention
    ADD CONSTRAINT idle_retention_pk PRIMARY KEY (entity_id, definition_key);


--
-- Name: kysely_migration_lock kysely_migration_lock_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.kysely_migration_lock
    ADD CONSTRAINT kysely_migration_lock_pkey PRIMARY KEY (id);


--
-- Name: kysely_migration kysely_migration_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.kysely_migration
    ADD CONSTRAINT kysely_migration_pkey PRIMARY KEY (name);


--
-- Name: regulations regulations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.regulations
    ADD CONSTRAINT regulations_pkey PRIMARY KEY (key);


--
-- Name: rules rules_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rules
    ADD CONSTRAINT rules_pkey PRIMARY KEY (key);


--
-- Name: rules_version rules_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rules_version
    ADD CONSTRAINT rules_version_pkey PRIMARY KEY (id);


--
-- Name: subject_key_wraps subject_key_wraps_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subject_key_wraps
    ADD CONSTRAINT subject_key_wraps_pk PRIMARY KEY (subject_key_id, encryption_key_id);


--
-- Name: subject_keys subject_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subject_keys
    ADD CONSTRAINT subject_keys_pkey PRIMARY KEY (id);


--
-- Name: tags tags_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tags
    ADD CONSTRAINT tags_pkey PRIMARY KEY (name);


--
-- Name: activity_log_by_application; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_application ON public.activity_log USING btree (application_id, sequence);


--
-- Name: activity_log_by_point; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_point ON public.activity_log USING btree (data_point_id, sequence) WHERE (event_type <> 'READ'::text);


--
-- Name: activity_log_by_subject; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_subject ON public.activity_log USING btree (subject_id, sequence);


--
-- Name: activity_log_by_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_time ON public.activity_log USING btree (event_time, sequence);


--
-- Name: alerts_by_rule; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_by_rule ON public.alerts USING btree (rule_key, created_date);


--
-- Name: alerts_by_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_by_time ON public.alerts USING btree (created_date, id);


--
-- Name: datapoint_regulations_by_regulation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoint_regulations_by_regulation ON public.datapoint_regulations USING btree (regulation);


--
-- Name: datapoint_tags_by_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoint_tags_by_tag ON public.datapoint_tags USING btree (tag);


--
-- Name: datapoints_by_attribute; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_attribute ON public.datapoints USING btree (attribute, created_date, id);


--
-- Name: datapoints_by_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_created ON public.datapoints USING btree (created_date, id);


--
-- Name: datapoints_by_definition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_definition ON public.datapoints USING btree (definition_key);


--
-- Name: datapoints_by_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_entity ON public.datapoints USING btree (entity_id, definition_key);


--
-- Name: datapoints_by_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_expiry ON public.datapoints USING btree (expires_at) WHERE (expires_at IS NOT NULL);


--
-- Name: datapoints_by_modified; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_modified ON public.datapoints USING btree (modified_date, id);


--
-- Name: datapoints_by_root; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_root ON public.datapoints USING btree (structure_root_id) WHERE (structure_root_id IS NOT NULL);


--
-- Name: datapoints_by_value; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_value ON public.datapoints USING btree (attribute, blind_index, created_date, id) WHERE (blind_index IS NOT NULL);


--
-- Name: definition_entity_types_by_entity_type; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX definition_entity_types_by_entity_type ON public.definition_entity_types USING btree (entity_type);


--
-- Name: definition_regulations_by_regulation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX definition_regulations_by_regulation ON public.definition_regulations USING btree (regulation);


--
-- Name: definition_tags_by_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX definition_tags_by_tag ON public.definition_tags USING btree (tag);


--
-- Name: entities_by_type; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX entities_by_type ON public.entities USING btree (type, created_date);


--
-- Name: entity_tags_by_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX entity_tags_by_tag ON public.entity_tags USING btree (tag);


--
-- Name: idle_retention_by_check; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idle_retention_by_check ON public.idle_retention USING btree (next_check);


--
-- Name: rules_by_name; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rules_by_name ON public.rules USING btree (name);


--
-- Name: subject_key_wraps_by_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subject_key_wraps_by_key ON public.subject_key_wraps USING btree (encryption_key_id);


--
-- Name: subject_keys_by_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subject_keys_by_entity ON public.subject_keys USING btree (entity_id);


--
-- Name: activity_log activity_log_no_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER activity_log_no_update BEFORE DELETE OR UPDATE ON public.activity_log FOR EACH ROW EXECUTE FUNCTION public.activity_log_append_only();


--
-- Name: activity_pending activity_pending_no_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER activity_pending_no_update BEFORE UPDATE ON public.activity_pending FOR EACH ROW EXECUTE FUNCTION public.activity_pending_no_update();


--
-- PostgreSQL database dump complete
--


